#!/bin/sh
# Install ROCm packages from AMD's apt repository (Ubuntu 22.04 runners).
#   .github/scripts/rocm_apt.sh PACKAGE...        (ROCM_VERSION from the environment)
set -eu
version=${ROCM_VERSION:?set ROCM_VERSION}
sudo mkdir -p --mode=0755 /etc/apt/keyrings
curl -sSfL https://repo.radeon.com/rocm/rocm.gpg.key | gpg --dearmor \
    | sudo tee /etc/apt/keyrings/rocm.gpg > /dev/null
echo "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] https://repo.radeon.com/rocm/apt/$version jammy main" \
    | sudo tee /etc/apt/sources.list.d/rocm.list > /dev/null
printf 'Package: *\nPin: release o=repo.radeon.com\nPin-Priority: 600\n' \
    | sudo tee /etc/apt/preferences.d/rocm-pin-600 > /dev/null
sudo apt-get update -q
sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
echo /opt/rocm/lib | sudo tee /etc/ld.so.conf.d/loadout-rocm.conf > /dev/null
sudo ldconfig
