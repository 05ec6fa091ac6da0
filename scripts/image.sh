#!/usr/bin/env bash
# Builds driftback's runtime image without any container registry, runs `driftback --version` and
# `driftback demo` inside it, and prints its size and how long each step took.
#
#   scripts/image.sh                 # target/release/driftback (built if missing) -> localhost/driftback:dev
#   DRIFTBACK_BINARY=path DRIFTBACK_IMAGE=name:tag scripts/image.sh
#
# The base is Debian bookworm made here with `debootstrap --variant=minbase` and imported with
# `podman import`; deploy/Dockerfile's `prebuilt` target is built on it with `podman build
# --isolation chroot --format docker` (the docker format keeps HEALTHCHECK), holding the binary
# built on this host (bookworm's glibc and OpenSSL, as the runtime stage has). The smoke test runs
# with `buildah run --isolation chroot`, which needs no container runtime. podman, buildah and
# debootstrap come from Debian's packages, installed when missing (as root). Storage: vfs, under
# podman's default root. The base is made once and reused (DRIFTBACK_REBUILD_BASE=1 to make it
# again). Nothing is left running.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"

log() { echo "image.sh: $*" >&2; }
started=$SECONDS
step() { log "$1 ($((SECONDS - started)) s so far)"; }

image="${DRIFTBACK_IMAGE:-localhost/driftback:dev}"
base="${DRIFTBACK_BASE_IMAGE:-localhost/driftback-bookworm-base:latest}"
binary="${DRIFTBACK_BINARY:-$repo/target/release/driftback}"
work="${DRIFTBACK_IMAGE_WORK:-$repo/target/image}"
storage=(--storage-driver vfs)

# 1. Tools, from Debian's packages.
missing=()
for tool in podman buildah debootstrap; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ "${#missing[@]}" -gt 0 ]; then
    [ "$(id -u)" -eq 0 ] || { log "missing ${missing[*]}; run as root or install: apt-get install podman buildah debootstrap crun uidmap"; exit 1; }
    step "installing podman, buildah and debootstrap from Debian's packages"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        podman buildah debootstrap crun uidmap fuse-overlayfs containers-storage >/dev/null
fi

# 2. The binary: the host's release build (bookworm here, as the image).
if [ ! -x "$binary" ]; then
    step "no binary at $binary; building it (cargo build --release)"
    cargo build --release --locked -p driftback
    binary="$repo/target/release/driftback"
fi

# 3. The base: a minimal bookworm root file system, imported as an image.
mkdir -p "$work"
if [ "${DRIFTBACK_REBUILD_BASE:-0}" = 1 ] || ! podman "${storage[@]}" image exists "$base"; then
    mirror="$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)"
    mirror="${mirror:-$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null)}"
    mirror="${DRIFTBACK_DEBIAN_MIRROR:-${mirror:-http://deb.debian.org/debian}}"
    rootfs="$work/rootfs"
    rm -rf "$rootfs"
    step "debootstrap --variant=minbase bookworm from $mirror"
    debootstrap --variant=minbase --include=ca-certificates,libssl3 bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
        || { log "debootstrap failed; see $work/debootstrap.log"; exit 1; }
    # Nothing of the build host's apt state or caches in the image, and, as Debian's slim images
    # do, no documentation, manual pages or translations.
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/lib/apt/lists/* \
        "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/*
    step "importing the base as $base"
    tar -C "$rootfs" -c . | podman "${storage[@]}" import - "$base" >/dev/null
    rm -rf "$rootfs"
fi

# 4. The image: deploy/Dockerfile's runtime, with the host's binary.
context="$(mktemp -d)"
trap 'rm -rf "$context"' EXIT
install -m 0755 "$binary" "$context/driftback"
strip "$context/driftback" 2>/dev/null || true
revision="$(git describe --always --dirty 2>/dev/null || true)"
step "building $image (target prebuilt of deploy/Dockerfile on $base)"
podman "${storage[@]}" build --isolation chroot --format docker --target prebuilt \
    --build-arg RUNTIME_IMAGE="$base" --build-arg BUILDER_IMAGE="$base" \
    --build-arg DRIFTBACK_GIT_REVISION="$revision" \
    -f "$repo/deploy/Dockerfile" -t "$image" "$context" >"$work/build.log" 2>&1 \
    || { tail -n 30 "$work/build.log" >&2; log "podman build failed; see $work/build.log"; exit 1; }

# 5. The smoke test, inside the image, as its user.
container="$(buildah "${storage[@]}" from "$image")"
trap 'buildah "${storage[@]}" rm "$container" >/dev/null 2>&1 || true; rm -rf "$context"' EXIT
step "driftback --version inside the image"
version="$(buildah "${storage[@]}" run --isolation chroot "$container" -- driftback --version)"
echo "$version"
case "$version" in "driftback "*) ;; *) log "unexpected --version output: $version"; exit 1 ;; esac
step "driftback demo inside the image"
buildah "${storage[@]}" run --isolation chroot "$container" -- driftback demo >"$work/demo.log" 2>&1 \
    || { tail -n 30 "$work/demo.log" >&2; log "driftback demo failed in the image; see $work/demo.log"; exit 1; }
tail -n 5 "$work/demo.log"
user="$(podman "${storage[@]}" image inspect --format '{{.Config.User}}' "$image")"
health="$(podman "${storage[@]}" image inspect --format '{{json .Config.Healthcheck}}' "$image")"
[ "$user" = "65532:65532" ] || { log "the image runs as '$user', not 65532:65532"; exit 1; }
[ "$health" != "null" ] || { log "the image lost its HEALTHCHECK (build with --format docker)"; exit 1; }

# 6. What it weighs.
bytes="$(podman "${storage[@]}" image inspect --format '{{.Size}}' "$image")"
binary_bytes="$(stat -c %s "$context/driftback")"
echo "image $image: $((bytes / 1000000)) MB ($bytes bytes; the binary $((binary_bytes / 1000000)) MB), user $user, healthcheck kept"
echo "image.sh took $((SECONDS - started)) s"
