"""util: the bottom layer, small helpers every other layer may use and that use nothing of ours.

`gcpause` (pausing the cycle collector around allocation bursts), `jsonsafe` (THE one JSON-safe
encoding of NaN/Inf/complex, used by every producer the front-end reads), `dtypes` (dtype names),
`compat` (the torch version check and the private autograd APIs we read), `static` (the one reader
of the shipped front-end bundle), `atomic` (every file written complete or not at all), `bidi` (a
user's string isolated from the text around it), `fields` (decoded JSON read strictly, each error
saying where), `warn` (warnings attributed to the user's own line), `regular` (a file someone gave
us opened only when it is a regular file, never waiting on it; a save's target checked the same
way, appends never truncating, one writer per file).
"""

__all__: list[str] = []
