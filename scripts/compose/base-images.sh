#!/usr/bin/env bash
# Builds, from Debian's packages and without any image registry, the images the compose proof puts in
# place of public ones:
#   RUNTIME   Debian 12 (minbase; no docs, man pages or apt lists, as debian:bookworm-slim), for the
#             Dockerfile's RUNTIME_IMAGE
#   POSTGRES  the same with Debian's postgresql and pgbackrest and an entrypoint that honours the official postgres
#             image's settings (postgres-entrypoint.sh), for the compose file's postgres service
#   SWIFT     the same with the Swift toolchain's build dependencies, this machine's toolchain, and the
#             local package mirrors git rewrites GitHub to (with that rewrite), for the Dockerfile's
#             SWIFT_IMAGE: `swift build` inside it resolves the packages offline
# Usage: scripts/compose/base-images.sh RUNTIME_TAG POSTGRES_TAG SWIFT_TAG   (root; DOCKER_HOST picks the engine)
set -euo pipefail
cd "$(dirname "$0")"
runtime_tag=$1 postgres_tag=$2 swift_tag=$3

suite=bookworm
mirrors=(
    "deb http://deb.debian.org/debian $suite main"
    "deb http://deb.debian.org/debian $suite-updates main"
    "deb http://deb.debian.org/debian-security $suite-security main"
)
# As in debian:bookworm-slim: apt keeps no package caches, and what it leaves out of every package (listed
# in the image, so later installs leave it out too).
apt_clean='DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";'
excludes='path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
path-include=/usr/share/locale/locale.alias
path-exclude=/usr/share/lintian/*'
dpkg_options=()
while read -r option; do dpkg_options+=(--dpkgopt="$option"); done <<<"$excludes"
plain_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# rootfs TAG [mmdebstrap options...] [docker import --change options after --]: builds and imports one image.
rootfs() {
    local tag=$1 options=() changes=()
    shift
    while [ $# -gt 0 ] && [ "$1" != -- ]; do options+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    for change in "$@"; do changes+=(--change "$change"); done
    # The merged-/usr hook instead of the usrmerge package, which would leave perl in the image.
    mmdebstrap --quiet --variant=minbase --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr "${dpkg_options[@]}" \
        --customize-hook="printf '%s\n' '$excludes' > \"\$1/etc/dpkg/dpkg.cfg.d/excludes\"" \
        --customize-hook="printf '%s\n' '$apt_clean' > \"\$1/etc/apt/apt.conf.d/docker-clean\"" \
        "${options[@]}" \
        --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/cache/apt/archives/*.deb' \
        "$suite" - "${mirrors[@]}" \
        | docker import "${changes[@]}" - "$tag" >/dev/null
    echo "built $tag"
}

toolchain_root() {
    local swift
    swift=$(readlink -f "$(command -v swift)")
    local root
    root=$(dirname "$(dirname "$(dirname "$swift")")")
    if [ "$root" = / ] || [ "$root" = /usr ]; then
        echo "the Swift toolchain is installed into $root, not a folder of its own that can be copied" >&2
        return 1
    fi
    echo "$root"
}

# The folders git rewrites https://github.com/ (and the like) to, when they are folders on this machine.
package_mirror_rules() {
    git config --system --get-regexp 'url\..*\.insteadof' 2>/dev/null | while read -r key value; do
        local base=${key#url.}
        base=${base%.insteadof}
        [ -d "$base" ] && printf '%s %s\n' "$base" "$value"
    done
    return 0
}

swift_hooks() {
    local toolchain=$1
    printf '%s\n' "--customize-hook=mkdir -p \"\$1$toolchain\" && cp -a \"$toolchain/.\" \"\$1$toolchain/\""
    local base value copied=" "
    while read -r base value; do
        [ -n "$base" ] || continue
        if [ "${copied#* "$base" }" = "$copied" ]; then
            printf '%s\n' "--customize-hook=mkdir -p \"\$1$base\" && cp -a \"$base/.\" \"\$1$base/\""
            copied="$copied$base "
        fi
        printf '%s\n' "--customize-hook=git config --file \"\$1/etc/gitconfig\" --add \"url.$base.insteadOf\" \"$value\""
    done < <(package_mirror_rules)
}

toolchain=$(toolchain_root)
mapfile -t swift_options < <(swift_hooks "$toolchain")

rootfs "$runtime_tag" -- 'CMD ["/bin/bash"]' &
runtime=$!

# The official image's conventions: data in /var/lib/postgresql/data, fast shutdown on the stop signal
# (which `docker import` cannot set).
rootfs "$postgres_tag" --include=postgresql,pgbackrest \
    --customize-hook='rm -rf "$1"/var/lib/postgresql/* "$1"/etc/postgresql/*' \
    --customize-hook='install -d -o postgres -g postgres -m 0700 "$1/var/lib/postgresql/data"' \
    --customize-hook="install -m 0755 postgres-entrypoint.sh \"\$1/usr/local/bin/docker-entrypoint.sh\"" \
    --customize-hook='for tool in "$1"/usr/lib/postgresql/*/bin/*; do ln -s "${tool#"$1"}" "$1/usr/local/bin/"; done' \
    -- "ENV PGDATA=/var/lib/postgresql/data" 'ENTRYPOINT ["docker-entrypoint.sh"]' 'CMD ["postgres"]' "EXPOSE 5432" \
    && printf 'FROM %s\nSTOPSIGNAL SIGINT\n' "$postgres_tag" | docker build --quiet --tag "$postgres_tag" - >/dev/null &
postgres=$!

rootfs "$swift_tag" \
    --include=binutils,git,ca-certificates,libc6-dev,libgcc-12-dev,libstdc++-12-dev,zlib1g-dev,libbrotli-dev,libcurl4,libxml2,libsqlite3-0,libncurses6,libedit2,pkg-config,tzdata \
    "${swift_options[@]}" \
    -- "ENV PATH=$toolchain/usr/bin:$plain_path" 'CMD ["/bin/bash"]' &
swift=$!

status=0
for job in $runtime $postgres $swift; do wait "$job" || status=1; done
exit $status
