bƒ
;"gradient_worker*$tcgw1 0 2 1 1 2 1 2 3 4 1 0 0.5 -0.5
D"gradient_worker*-tcgw2 logistic 1 2 1 1 2 1 2 3 4 1 0 0.5 -0.5