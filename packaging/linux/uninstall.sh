#!/bin/sh
# Remove what install.sh added. Your settings, logs and downloaded models stay
# (in ~/.config/loadout, ~/.local/share/loadout, ~/.cache/loadout, ~/.local/state/loadout);
# ./uninstall.sh --purge removes those as well.
set -eu
data=${XDG_DATA_HOME:-$HOME/.local/share}
rm -rf "$HOME/.local/opt/loadout"
rm -f "$data/applications/loadout.desktop" \
      "$data/icons/hicolor/256x256/apps/loadout.png" \
      "$data/icons/hicolor/scalable/apps/loadout.svg"
if [ -L "$HOME/.local/bin/loadout" ]; then rm -f "$HOME/.local/bin/loadout"; fi
if [ "${1:-}" = "--purge" ]; then
    rm -rf "${XDG_CONFIG_HOME:-$HOME/.config}/loadout" "${XDG_CACHE_HOME:-$HOME/.cache}/loadout" \
           "$data/loadout" \
           "${XDG_STATE_HOME:-$HOME/.local/state}/loadout"
fi
echo "Loadout is uninstalled."
