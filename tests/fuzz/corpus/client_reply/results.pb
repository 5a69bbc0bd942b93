r"
checksum=1