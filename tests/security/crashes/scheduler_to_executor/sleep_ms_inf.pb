b
"sleep*ms=inf