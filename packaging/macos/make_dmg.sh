#!/bin/bash
# Put Loadout.app into a compressed, drag-to-install disk image.
#
#   bash packaging/macos/make_dmg.sh dist/Loadout.app 0.1.0      -> dist/Loadout-0.1.0.dmg
#
# packaging/build.py runs this on macOS after PyInstaller has made Loadout.app and the
# engine builds (Metal, CPU) have been copied into it. Signs the app with
# $CODESIGN_IDENTITY (a "Developer ID Application" identity for distribution), or ad hoc
# when unset: enough to run on the build machine and, after "Open" in the Finder's
# context menu, on others. Notarisation (xcrun notarytool) needs an Apple account and is
# left to the release machine: set NOTARY_PROFILE to a stored notarytool profile.
set -euo pipefail

app=${1:?usage: make_dmg.sh PATH/Loadout.app VERSION}
version=${2:?usage: make_dmg.sh PATH/Loadout.app VERSION}
out_dir=$(cd "$(dirname "$app")" && pwd)
dmg="$out_dir/Loadout-$version.dmg"
identity=${CODESIGN_IDENTITY:--}

if [ "$identity" = "-" ]; then
    codesign --force --deep --sign - "$app"
else
    codesign --force --deep --options runtime --timestamp --sign "$identity" "$app"
fi
codesign --verify --deep --strict "$app"

staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
cp -R "$app" "$staging/"
ln -s /Applications "$staging/Applications"
rm -f "$dmg"
hdiutil create -volname "Loadout $version" -srcfolder "$staging" -fs HFS+ \
    -format UDZO -imagekey zlib-level=9 -ov "$dmg"

if [ -n "${NOTARY_PROFILE:-}" ] && [ "$identity" != "-" ]; then
    codesign --sign "$identity" --timestamp "$dmg"
    xcrun notarytool submit "$dmg" --keychain-profile "$NOTARY_PROFILE" --wait
    xcrun stapler staple "$dmg"
fi
echo "$dmg"
