"""`tether` alone on a terminal: a multi-turn chat, a client of the same engine as `tether ask`."""
