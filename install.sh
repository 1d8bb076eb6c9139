#!/usr/bin/env bash
# Build git-ralph from this checkout and install it, with its man pages and
# shell completions, under PREFIX (default: ~/.local), so that `git ralph`,
# `git help ralph` and `git ralph <TAB>` work. No root needed; running it again
# replaces the previous install; --uninstall removes it.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: ./install.sh [--prefix DIR] [--uninstall]

Builds git-ralph (cargo build --release --locked) and installs into DIR
(default: $PREFIX, else ~/.local):
  bin/git-ralph
  share/man/man1/git-ralph.1, git-ralph-<command>.1
  share/bash-completion/completions/git-ralph
  share/zsh/site-functions/_git-ralph
  share/fish/vendor_completions.d/git-ralph.fish, share/fish/vendor_conf.d/git-ralph.fish

  --prefix DIR   install into DIR instead
  --uninstall    remove what an earlier run installed into DIR
  -h, --help     show this help
EOF
}

error() {
  printf 'error: %s\n' "$1" >&2
  [ -z "${2:-}" ] || printf 'hint: %s\n' "$2" >&2
  exit "${3:-1}"
}

prefix="${PREFIX:-$HOME/.local}"
action=install
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || error "--prefix needs a directory" "./install.sh --prefix DIR" 2
              prefix="$2"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    --uninstall) action=uninstall; shift ;;
    -h|--help) usage; exit 0 ;;
    *) error "unknown argument '$1'" "see ./install.sh --help" 2 ;;
  esac
done
[ -n "$prefix" ] || error "the prefix is empty" "set PREFIX or pass --prefix DIR" 2
case "$prefix" in /*) ;; *) prefix="$PWD/$prefix" ;; esac
prefix="${prefix%/}"

src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin_dir="$prefix/bin"
man_dir="$prefix/share/man/man1"
bash_dir="$prefix/share/bash-completion/completions"
zsh_dir="$prefix/share/zsh/site-functions"
fish_dir="$prefix/share/fish/vendor_completions.d"
fish_conf_dir="$prefix/share/fish/vendor_conf.d"
# Everything an install put in place, one path per line, so that --uninstall
# (and the next install) removes exactly that.
manifest="$prefix/share/git-ralph/installed-files"

remove_installed() {
  local count=0 path
  [ -f "$manifest" ] || { echo 0; return; }
  while IFS= read -r path; do
    case "$path" in "$prefix"/*) ;; *) continue ;; esac
    if [ -e "$path" ] || [ -L "$path" ]; then
      rm -f -- "$path"
      count=$((count + 1))
    fi
  done <"$manifest"
  rm -f -- "$manifest"
  rmdir -- "${manifest%/*}" 2>/dev/null || true
  echo "$count"
}

if [ "$action" = uninstall ]; then
  if [ ! -f "$manifest" ]; then
    echo "git-ralph is not installed in $prefix; nothing to remove."
    exit 0
  fi
  removed="$(remove_installed)"
  echo "removed git-ralph from $prefix ($removed files)."
  exit 0
fi

for dir in man/man1 completions; do
  [ -d "$src/$dir" ] || error "$src/$dir is missing" "run install.sh from a complete git-ralph checkout"
done
command -v cargo >/dev/null 2>&1 ||
  error "cargo was not found on PATH; git-ralph is built from source with Rust's cargo" \
        "install Rust (https://rustup.rs), open a new shell so that cargo is on PATH, then run ./install.sh again"

echo "building git-ralph (cargo build --release --locked)..."
# cargo reports where it put the binary, wherever its target directory is.
artifacts="$(cd "$src" && cargo build --release --locked --bin git-ralph --message-format=json-render-diagnostics)" ||
  error "cargo could not build git-ralph" "see cargo's messages above"
exe="$(printf '%s\n' "$artifacts" | grep -o '"executable":"[^"]*/git-ralph"' | tail -n 1 | sed 's/^"executable":"//; s/"$//')"
[ -n "$exe" ] && [ -x "$exe" ] || error "cargo built git-ralph but did not say where the binary is" "report this; meanwhile copy target/release/git-ralph to $bin_dir by hand"

remove_installed >/dev/null
mkdir -p "$bin_dir" "$man_dir" "$bash_dir" "$zsh_dir" "$fish_dir" "$fish_conf_dir" "${manifest%/*}"
installed=()
put() { # mode source target
  install -m "$1" "$2" "$3"
  installed+=("$3")
}
put 755 "$exe" "$bin_dir/git-ralph"
pages=0
for page in "$src"/man/man1/*.1; do
  put 644 "$page" "$man_dir/${page##*/}"
  pages=$((pages + 1))
done
put 644 "$src/completions/git-ralph.bash" "$bash_dir/git-ralph"
put 644 "$src/completions/_git-ralph" "$zsh_dir/_git-ralph"
put 644 "$src/completions/git-ralph.fish" "$fish_dir/git-ralph.fish"
put 644 "$src/completions/git-ralph.conf.fish" "$fish_conf_dir/git-ralph.fish"
printf '%s\n' "${installed[@]}" >"$manifest"

version="$("$bin_dir/git-ralph" --version 2>/dev/null || echo git-ralph)"
echo "installed $version into $prefix: bin/git-ralph, $pages man pages, bash, zsh and fish completions."

# Hints, one line each, only for what will not work as it stands.
on_path=no
case ":$PATH:" in *":$bin_dir:"*|*":$bin_dir/:"*) on_path=yes ;; esac
if [ "$on_path" = no ]; then
  echo "note: $bin_dir is not on your PATH; add it: echo 'export PATH=\"$bin_dir:\$PATH\"' >> ~/.bashrc (or your shell's profile)"
fi
if command -v man >/dev/null 2>&1; then
  found="$(PATH="$bin_dir:$PATH" man -w git-ralph 2>/dev/null || true)"
  if [ "$found" != "$man_dir/git-ralph.1" ] && [ "$found" != "$man_dir/git-ralph.1.gz" ]; then
    echo "note: man does not find $man_dir/git-ralph.1; add it: export MANPATH=\"$prefix/share/man:\$MANPATH\""
  fi
fi
bash_user_dir="${BASH_COMPLETION_USER_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/bash-completion}/completions"
bash_seen=no
[ "$bash_dir" = "$bash_user_dir" ] && bash_seen=yes
IFS=: read -r -a data_dirs <<<"${XDG_DATA_DIRS:-/usr/local/share:/usr/share}"
for dir in "${data_dirs[@]}"; do
  [ "${dir%/}/bash-completion/completions" = "$bash_dir" ] && bash_seen=yes
done
if [ "$bash_seen" = no ] || ! { [ -f /usr/share/bash-completion/bash_completion ] || [ -f /etc/bash_completion ] || [ -f /usr/local/share/bash-completion/bash_completion ]; }; then
  echo "note: for bash completion, add to ~/.bashrc (after git's completion): source $bash_dir/git-ralph"
fi
if command -v zsh >/dev/null 2>&1 && ! zsh -fc 'print -rl -- $fpath' 2>/dev/null | grep -qxF "$zsh_dir"; then
  echo "note: for zsh completion, add to ~/.zshrc before compinit: fpath=($zsh_dir \$fpath)"
fi
if command -v fish >/dev/null 2>&1; then
  fish_seen=no
  [ "$fish_dir" = "${XDG_DATA_HOME:-$HOME/.local/share}/fish/vendor_completions.d" ] && fish_seen=yes
  for dir in "${data_dirs[@]}"; do
    [ "${dir%/}/fish/vendor_completions.d" = "$fish_dir" ] && fish_seen=yes
  done
  if [ "$fish_seen" = no ]; then
    echo "note: for fish completion, copy $fish_dir/git-ralph.fish to ~/.config/fish/completions/ and $fish_conf_dir/git-ralph.fish to ~/.config/fish/conf.d/"
  fi
fi
echo "try it: git ralph demo"
