"""The detect-secrets oracle of credlint's tests: scans each file named on the command line
with detect-secrets' default plugins and filters (what `detect-secrets scan` runs), and prints
one JSON line per file: {"file": NAME, "lines": [line numbers of the secrets it reports],
"values": [the secrets themselves]}.

One process for every file: `detect-secrets scan` once per file costs half a second each.
Run by tests/pragma_oracle.rs; needs detect-secrets 1.5.0 (pip install detect-secrets==1.5.0).
"""

import json
import sys

from detect_secrets.core.scan import scan_file
from detect_secrets.settings import default_settings


def main() -> None:
    with default_settings():
        for name in sys.argv[1:]:
            secrets = list(scan_file(name))
            lines = sorted({secret.line_number for secret in secrets})
            values = sorted({secret.secret_value or "" for secret in secrets})
            print(json.dumps({"file": name, "lines": lines, "values": values}))


if __name__ == "__main__":
    main()
