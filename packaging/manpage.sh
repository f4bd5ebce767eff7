#!/bin/sh
# Writes the man page of one of our tools from its own --help texts, so the
# page and the help can never disagree: the tool's help, then every verb's
# (and a verb's verbs', as in `fleetctl contract validate`).
# usage: manpage.sh TOOL NAME DATE VERSION > NAME.1
#   TOOL: the built binary; NAME: its installed name; DATE: the page's date
#   (the changelog's, so the package is reproducible).
set -eu
tool=$1
name=$2
date=$3
version=$4

# The help as the installed command prints it, escaped for roff: a
# backslash is \e, and a line starting with . or ' is not a request.
help_of() {
  "$tool" "$@" --help | sed -e "s|^Usage: [^ ]*$name|Usage: $name|" -e 's/\\/\\e/g' \
    -e "s/^\([.']\)/\\\\\&\1/"
}

# The verbs a help text lists under "Subcommands:".
verbs_of() {
  "$tool" "$@" --help | awk '/^Subcommands:/ { listing = 1; next }
    listing && /^  [a-z]/ { print $1; next }
    listing && !/^  / { listing = 0 }'
}

summary=$("$tool" --help | head -1 | sed "s/^$name: //")
upper=$(echo "$name" | tr '[:lower:]' '[:upper:]')
cat << EOF
.TH $upper 1 "$date" "envcontract $version" "User Commands"
.SH NAME
$name \\- $summary
.SH SYNOPSIS
.B $name
[\\fIOPTIONS\\fR] \\fIVERB\\fR [\\fIVERB OPTIONS\\fR]
.SH DESCRIPTION
.nf
EOF
help_of
echo ".fi"
echo ".SH VERBS"
for verb in $(verbs_of); do
  echo ".SS $name $verb"
  echo ".nf"
  help_of "$verb"
  echo ".fi"
  for inner in $(verbs_of "$verb"); do
    echo ".SS $name $verb $inner"
    echo ".nf"
    help_of "$verb" "$inner"
    echo ".fi"
  done
done
cat << EOF
.SH FILES
.TP
.I /etc/envcontract/agent.yaml
the agent's configuration
.TP
.I /usr/share/envcontract/contracts/
the shipped contracts, one per accelerator platform
.SH SEE ALSO
.BR envcontractd (1),
.BR fleetctl (1),
and /usr/share/doc/envcontract/ (agent.md, contracts.md, api.md, fleetctl.md, security.md).
EOF
