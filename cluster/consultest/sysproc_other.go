//go:build !linux

package consultest

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// waitStopped cannot tell without /proc; signals are usually delivered at once.
func waitStopped(pid int, stopped bool) error { return nil }
