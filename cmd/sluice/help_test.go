package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// runHere runs the command line in this process.
func runHere(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), code
}

// Every command and subcommand answers -h and --help with exit 0 and, on
// stdout, its synopsis, flags and examples; a group, its subcommands.
func TestEveryCommandHasHelp(t *testing.T) {
	for _, h := range helpTopics {
		for _, ask := range []string{"-h", "--help"} {
			args := append(strings.Fields(h.path), ask)
			out, errOut, code := runHere(args...)
			if code != 0 || errOut != "" {
				t.Errorf("sluice %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
				continue
			}
			for _, want := range []string{h.short + ".", "Usage:\n  sluice " + h.path + " " + h.args, "Examples:\n  "} {
				if !strings.Contains(out, want) {
					t.Errorf("sluice %s: no %q in\n%s", strings.Join(args, " "), want, out)
				}
			}
			if h.path != "completion" && !strings.Contains(out, "Flags:\n") {
				t.Errorf("sluice %s: no flags in\n%s", strings.Join(args, " "), out)
			}
		}
		if out, _, code := runHere(append([]string{"help"}, strings.Fields(h.path)...)...); code != 0 || !strings.Contains(out, "sluice "+h.path) {
			t.Errorf("sluice help %s: exit %d\n%s", h.path, code, out)
		}
	}
	for _, g := range groups {
		subs := subcommandsOf(g.path)
		if len(subs) == 0 {
			t.Errorf("group %s has no subcommands", g.path)
		}
		for _, args := range [][]string{{g.path, "-h"}, {g.path, "--help"}, {"help", g.path}} {
			out, errOut, code := runHere(args...)
			if code != 0 || errOut != "" {
				t.Errorf("sluice %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
			}
			for _, s := range subs {
				if !strings.Contains(out, "  "+strings.TrimPrefix(s.path, g.path+" ")+" ") {
					t.Errorf("sluice %s does not list %s:\n%s", strings.Join(args, " "), s.path, out)
				}
			}
		}
		// Without a subcommand: the list, on stderr, and a usage exit.
		if out, errOut, code := runHere(g.path); code != 2 || out != "" || !strings.Contains(errOut, "Commands:") {
			t.Errorf("sluice %s: exit %d, stdout %q, stderr %q", g.path, code, out, errOut)
		}
		if _, errOut, code := runHere(g.path, "nope"); code != 2 || !strings.Contains(errOut, `unknown command "nope"`) {
			t.Errorf("sluice %s nope: exit %d, stderr %q", g.path, code, errOut)
		}
	}
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		out, _, code := runHere(args...)
		if code != 0 {
			t.Errorf("sluice %s: exit %d", args[0], code)
		}
		for _, h := range append(groups, helpTopics...) {
			name, _, _ := strings.Cut(h.path, " ")
			if !strings.Contains(out, "\n  "+name+" ") {
				t.Errorf("sluice %s does not list %s", args[0], name)
			}
		}
	}
}

// A flag a command does not have: the error and where help is, exit 2.
func TestUnknownFlagPointsToHelp(t *testing.T) {
	out, errOut, code := runHere("topic", "create", "t", "--partitons", "3")
	if code != 2 || out != "" || !strings.Contains(errOut, "-partitons") || !strings.Contains(errOut, "Run 'sluice topic create -h'") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// Every example in the help parses: its flags exist and take what it
// gives them (the command stops at the -h appended to it).
func TestHelpExamplesParse(t *testing.T) {
	for _, h := range helpTopics {
		for _, e := range h.examples {
			if h.path == "completion" {
				continue // TestCompletion runs these
			}
			args := exampleArgs(t, e)
			if out, errOut, code := runHere(append(args, "-h")...); code != 0 || !strings.Contains(out, "Usage:") {
				t.Errorf("example %q: exit %d\n%s", e, code, errOut)
			}
		}
	}
}

// exampleArgs splits the sluice command of an example line into its
// arguments: what follows "sluice" up to a pipe or redirection, with
// single quotes removed.
func exampleArgs(t *testing.T, line string) []string {
	t.Helper()
	_, cmd, ok := strings.Cut(line, "sluice ")
	if !ok {
		t.Fatalf("example %q does not run sluice", line)
	}
	if i := strings.IndexAny(cmd, "|<>"); i >= 0 {
		cmd = cmd[:i]
	}
	var args []string
	for i, part := range strings.Split(cmd, "'") {
		if i%2 == 1 {
			args = append(args, part)
			continue
		}
		args = append(args, strings.Fields(part)...)
	}
	return args
}

// The completion scripts complete commands, subcommands and flags by
// asking the binary; bash runs here, zsh and fish when installed.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		if out, _, code := runHere("completion", shell); code != 0 || !strings.Contains(out, "__complete") {
			t.Errorf("completion %s: exit %d\n%s", shell, code, out)
		}
	}
	if _, errOut, code := runHere("completion", "tcsh"); code != 2 || !strings.Contains(errOut, "bash, zsh or fish") {
		t.Errorf("completion tcsh: exit %d, %q", code, errOut)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	path := filepath.Dir(cliBin) + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, c := range []struct {
		words string
		want  []string
	}{
		{"sluice to", []string{"topic"}},
		{"sluice topic cr", []string{"create"}},
		{"sluice consume --from", []string{"--from-beginning"}},
		{"sluice group reset-offsets --to-e", []string{"--to-earliest"}},
		{"sluice completion ", []string{"bash", "fish", "zsh"}},
	} {
		words := strings.Fields(c.words)
		if strings.HasSuffix(c.words, " ") {
			words = append(words, "")
		}
		script := `source <(sluice completion bash); COMP_WORDS=(` + quoteWords(words) + `); COMP_CWORD=` +
			strconv.Itoa(len(words)-1) + `; _sluice; printf '%s\n' "${COMPREPLY[@]}" | sort`
		cmd := exec.Command(bash, "-c", script)
		cmd.Env = append(os.Environ(), "PATH="+path)
		out, err := cmd.CombinedOutput()
		if got := strings.Fields(string(out)); err != nil || strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%q completes to %q (%v), want %q", c.words, out, err, c.want)
		}
	}
}

func quoteWords(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + w + "'"
	}
	return strings.Join(q, " ")
}
