#!/bin/sh
# Install Loadout for this user: no root, nothing outside your home folder.
#   ./install.sh            (or double-click it and choose "Run")
# The app goes to ~/.local/opt/loadout, a menu entry and icon are added, and
# ~/.local/bin/loadout starts it from a terminal. ./uninstall.sh removes all of it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=${XDG_DATA_HOME:-$HOME/.local/share}
# Not under ~/.local/share/loadout: that is where Loadout keeps your models and data.
app="$HOME/.local/opt/loadout"
bin="$HOME/.local/bin"

rm -rf "$app.new"
mkdir -p "$app.new" "$bin" "$data/applications" "$data/icons/hicolor/256x256/apps" \
         "$data/icons/hicolor/scalable/apps"
cp -a "$here/loadout/." "$app.new/"
rm -rf "$app"
mv "$app.new" "$app"
cp "$here/loadout.png" "$data/icons/hicolor/256x256/apps/loadout.png"
cp "$here/loadout.svg" "$data/icons/hicolor/scalable/apps/loadout.svg"
sed "s|^Exec=.*|Exec=\"$app/loadout\"|" "$here/loadout.desktop" \
    > "$data/applications/loadout.desktop"
chmod 644 "$data/applications/loadout.desktop"
ln -sf "$app/loadout" "$bin/loadout"
command -v update-desktop-database >/dev/null 2>&1 \
    && update-desktop-database "$data/applications" >/dev/null 2>&1 || true
command -v gtk-update-icon-cache >/dev/null 2>&1 \
    && gtk-update-icon-cache -q "$data/icons/hicolor" >/dev/null 2>&1 || true
echo "Loadout is installed: find it in your applications menu, or run: $bin/loadout"
echo "Check it works (loads the built-in demo model): $bin/loadout --self-test"
