R2
host:1host"gpu0*	
zonea2noop2sleepH