"""Pure logic of the Porfiry runtime: no sockets, no actors; tested directly."""
