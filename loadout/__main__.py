from __future__ import annotations

from loadout.cli import main

raise SystemExit(main())
