"""k25console: the operator's Textual console. It talks to the agent only through ``console.link``.

Every entry point of the console imports this package first, so the crypto libraries' own
deprecation noise is filtered here, before ``console.link`` imports asyncssh: asyncssh 2.x still
names DSA keys in its type hints, and cryptography warns about that on every import (ten lines on
every ``k25console`` start, ``--help`` included), which is nothing an operator can act on.
"""

import warnings

from cryptography.utils import CryptographyDeprecationWarning

warnings.filterwarnings("ignore", category=CryptographyDeprecationWarning, module=r"asyncssh(\.|$)")
