"""What both sides of a ZeroMQ link share, below `actors/` and `phone/`: the socket pump
(`zmqio`) and the CURVE key files (`keys`)."""
