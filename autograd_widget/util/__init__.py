"""util: the bottom layer, small helpers every other layer may use and that use nothing of ours.

`gcpause` (pausing the cycle collector around allocation bursts), `jsonsafe` (THE one JSON-safe
encoding of NaN/Inf/complex, used by every producer the front-end reads), `dtypes` (dtype names),
`compat` (the torch version check and the private autograd APIs we read), `static` (the one reader
of the shipped front-end bundle).
"""

__all__: list[str] = []
