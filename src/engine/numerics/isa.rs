//! The instruction set of the element-wise kernels, detected once per process.

use std::sync::OnceLock;

/// Instruction set of the element-wise kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    Avx512,
    Avx2,
    Plain,
}

impl Isa {
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2 => "avx2+fma",
            Isa::Plain => "portable",
        }
    }
}

/// The best instruction set of this CPU (`PACAUC_ISA=plain|avx2|avx512` lowers it).
pub fn detected_isa() -> Isa {
    static ISA: OnceLock<Isa> = OnceLock::new();
    *ISA.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        let best = if std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512dq")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("fma")
        {
            Isa::Avx512
        } else if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            Isa::Avx2
        } else {
            Isa::Plain
        };
        #[cfg(not(target_arch = "x86_64"))]
        let best = Isa::Plain;
        match std::env::var("PACAUC_ISA").as_deref() {
            Ok("plain") => Isa::Plain,
            Ok("avx2") if best != Isa::Plain => Isa::Avx2,
            _ => best,
        }
    })
}
