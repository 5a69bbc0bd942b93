b`

"noop
#"sleep*ms=20 sigma=0.3 seed=4
"spin*ms=1
"matmul*
n=8 seed=2