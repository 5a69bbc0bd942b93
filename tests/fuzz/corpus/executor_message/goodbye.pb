b
bye