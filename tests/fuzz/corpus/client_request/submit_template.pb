R

fanout
sleepms=5 H