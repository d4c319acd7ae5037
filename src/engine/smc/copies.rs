//! Resampled copies that the moves left in place. Resampling gives a particle
//! of large weight many copies; a near-independence move rarely leaves a state
//! whose density the proposal underrates, so all its copies may stay. On the
//! 84-feature adult subsample (seed 3) one such state, a jump to 4.3 risk sd
//! below the cloud's median at γ ≈ 760, kept 19 identical copies through a
//! stage (the other stages' largest group: ≤ 10) and its lineage grew to 9.5%
//! of the cloud, adding ≈ +0.10 to log Ẑ; moving such copies on (more moves
//! while a group exceeds 8) left that run's log Ẑ where it was
//! (docs/BENCHMARKS.md, "log Z at 84 features: one lucky lineage").

/// Over the chains of a stage (`ancestors` ascending within folds, so copies
/// of one ancestor are adjacent; `moved` whether each chain accepted a move):
/// the share of chains that duplicate another (a group of copies that all
/// stayed counts once) and the largest group of copies that all stayed.
pub fn unmoved_copies(ancestors: &[usize], moved: &[bool]) -> (f64, usize) {
    let m = ancestors.len();
    let (mut excess, mut largest) = (0usize, 0usize);
    let mut i = 0;
    while i < m {
        let mut j = i;
        let mut stayed = 0usize;
        while j < m && ancestors[j] == ancestors[i] {
            stayed += usize::from(!moved[j]);
            j += 1;
        }
        excess += stayed.saturating_sub(1);
        largest = largest.max(stayed);
        i = j;
    }
    (excess as f64 / m.max(1) as f64, largest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_copies_that_all_stayed() {
        // Ancestor 3 has four copies, three unmoved; ancestor 7 two, both moved;
        // ancestor 9 one, unmoved (a lone chain, no duplicate).
        let ancestors = [3, 3, 3, 3, 7, 7, 9];
        let moved = [false, true, false, false, true, true, false];
        let (share, largest) = unmoved_copies(&ancestors, &moved);
        assert_eq!(largest, 3);
        assert!((share - 2.0 / 7.0).abs() < 1e-15);
        assert_eq!(unmoved_copies(&ancestors, &[true; 7]), (0.0, 0));
    }
}
