package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is the release this binary is; a release build sets it with
// -ldflags "-X main.version=v1.2.3". Otherwise it is the module version
// when built with 'go install', or "dev".
var version = ""

// buildInfo is what 'sluice version' prints.
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Modified  bool   `json:"modified"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

func readBuildInfo() buildInfo {
	info := buildInfo{Version: version, Commit: "unknown", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	return info
}

// short is the version as brokers report it: version and commit.
func (b buildInfo) short() string {
	commit := b.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if b.Modified {
		commit += "+modified"
	}
	return b.Version + " (" + commit + ")"
}

func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", stdout, stderr)
	format := formatFlag(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("unexpected argument %q", pos[0])
	}
	info := readBuildInfo()
	if format.json() {
		writeJSONLine(stdout, info)
		return nil
	}
	modified := ""
	if info.Modified {
		modified = " (with uncommitted changes)"
	}
	fmt.Fprintf(stdout, "sluice %s\ncommit %s%s\n%s %s\n", info.Version, info.Commit, modified, info.GoVersion, info.Platform)
	return nil
}
