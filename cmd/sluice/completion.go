package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// completeCommand is the hidden command the completion scripts call with
// the words typed so far; it prints the candidates for the next one, one
// per line. The scripts stay small and never go stale: the binary answers.
const completeCommand = "__complete"

const bashCompletion = `# bash completion for sluice: source <(sluice completion bash)
_sluice() {
    local cur="${COMP_WORDS[COMP_CWORD]}"
    local IFS=$'\n'
    COMPREPLY=($(compgen -W "$(sluice __complete "${COMP_WORDS[@]:1:COMP_CWORD-1}" 2>/dev/null)" -- "$cur"))
}
complete -o default -F _sluice sluice
`

const zshCompletion = `#compdef sluice
# zsh completion for sluice: source <(sluice completion zsh)
_sluice() {
    local -a candidates
    candidates=("${(@f)$(sluice __complete "${(@)words[2,CURRENT-1]}" 2>/dev/null)}")
    if [[ -n "${candidates[1]}" ]]; then
        compadd -- "${candidates[@]}"
    else
        _files
    fi
}
if [[ "${funcstack[1]}" = "_sluice" ]]; then
    _sluice "$@"
else
    compdef _sluice sluice
fi
`

const fishCompletion = `# fish completion for sluice: sluice completion fish | source
complete -c sluice -a '(sluice __complete (commandline -opc)[2..-1])'
`

// runCompletion is `sluice completion bash|zsh|fish`.
func runCompletion(args []string, stdout io.Writer) error {
	if len(args) == 1 && isHelp(args[0]) {
		printCommandHelp(stdout, "completion", nil)
		return nil
	}
	if len(args) != 1 {
		return usageErr("want bash, zsh or fish")
	}
	switch args[0] {
	case "bash":
		fmt.Fprint(stdout, bashCompletion)
	case "zsh":
		fmt.Fprint(stdout, zshCompletion)
	case "fish":
		fmt.Fprint(stdout, fishCompletion)
	default:
		return usageErr("unknown shell %q: want bash, zsh or fish", args[0])
	}
	return nil
}

// runComplete prints the candidates for the word after words.
func runComplete(words []string, stdout io.Writer) int {
	for _, c := range completions(words) {
		fmt.Fprintln(stdout, c)
	}
	return 0
}

// completions are the candidates for the word after words: commands,
// subcommands, or the command's flags (none after a flag that takes a
// value: the shell offers file names).
func completions(words []string) []string {
	if len(words) == 0 {
		var out []string
		for _, h := range helpTopics {
			name, _, _ := strings.Cut(h.path, " ")
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
		return append(out, "help")
	}
	path := words[0]
	rest := words[1:]
	switch {
	case path == "help":
		return completions(rest)
	case path == "completion":
		if len(rest) == 0 {
			return []string{"bash", "zsh", "fish"}
		}
		return nil
	}
	if _, ok := findTopic(groups, path); ok {
		if len(rest) == 0 {
			var out []string
			for _, s := range subcommandsOf(path) {
				out = append(out, strings.TrimPrefix(s.path, path+" "))
			}
			return out
		}
		path, rest = path+" "+rest[0], rest[1:]
	}
	fs := flagSetOf(path)
	if fs == nil {
		return nil
	}
	if len(rest) > 0 {
		last := rest[len(rest)-1]
		if strings.HasPrefix(last, "-") && !strings.Contains(last, "=") {
			if f := fs.Lookup(strings.TrimLeft(last, "-")); f != nil && !isBoolFlag(f) {
				return nil // the flag's value comes next
			}
		}
	}
	var out []string
	fs.VisitAll(func(f *flag.Flag) { out = append(out, "--"+f.Name) })
	return append(out, "--help")
}

// flagSetOf returns the flag set the command at path builds, or nil for
// no such command: the command runs with -h, which stops it before it
// does anything.
func flagSetOf(path string) *flag.FlagSet {
	if _, ok := findTopic(helpTopics, path); !ok || path == "completion" {
		return nil
	}
	var seen *flag.FlagSet
	flagSetSeen = func(_ string, fs *flag.FlagSet) { seen = fs }
	defer func() { flagSetSeen = nil }()
	run(append(strings.Fields(path), "-h"), nil, io.Discard, io.Discard)
	return seen
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
