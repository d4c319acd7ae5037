#!/usr/bin/env python3
"""Issue 28's size of the EP engine: non-test lines of src/engine/ep/.

    python3 docs/ep_size.py [ROOT]      (ROOT default src/engine/ep; TOP=20 lists the biggest files)

Test code is left out: files named *tests*.rs, modules a mod.rs declares under
#[cfg(test)] (e.g. spike_slab/smc_agreement.rs) and inline #[cfg(test)] items.
Prints non-test lines, of which comment lines, and code-only lines; per file:
lines, code lines (no comments, no blank lines), path.
"""
import os, re, sys

root=sys.argv[1] if len(sys.argv)>1 else 'src/engine/ep'
def testmods(d):
  out=set()
  for m in ('mod.rs',):
    q=os.path.join(d,m)
    if os.path.exists(q):
      out|=set(re.findall(r'#\[cfg\(test\)\]\s*mod (\w+);',open(q).read()))
  return out
tot=0;code=0;com=0;rows=[]
for d,_,fs in os.walk(root):
  for f in fs:
    if not f.endswith('.rs') or 'tests' in f: continue
    p=os.path.join(d,f)
    if f[:-3] in testmods(d): continue
    L=open(p).read().split('\n')
    if L and L[-1]=='': L=L[:-1]
    keep=[];i=0
    while i<len(L):
      if L[i].strip().startswith('#[cfg(test)]'):
        # skip following item
        j=i+1; depth=0; started=False
        while j<len(L):
          depth+=L[j].count('{')-L[j].count('}')
          if '{' in L[j]: started=True
          if (started and depth<=0) or (not started and L[j].rstrip().endswith(';')): break
          j+=1
        i=j+1; continue
      keep.append(L[i]); i+=1
    n=len(keep); c=sum(1 for x in keep if x.strip().startswith('//')); b=sum(1 for x in keep if not x.strip())
    tot+=n; com+=c; rows.append((n,n-c-b,p))
for r in sorted(rows,reverse=True)[:int(os.environ.get('TOP','0'))]: print(*r)
print('non-test lines',tot,'comments',com,'code-only',tot-com)
