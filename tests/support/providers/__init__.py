"""Loopback stand-ins for the model providers: servers speaking each vendor's wire format, and the
vendors' request schemas they apply."""
