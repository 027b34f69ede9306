package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// maxPasswordBytes bounds the password line read from stdin.
const maxPasswordBytes = 4096

// readPassword reads a password: typed at a prompt without echo when
// stdin is a terminal, else the first line of stdin (a pipe or a file).
func readPassword(stdin io.Reader, stderr io.Writer, prompt string) (string, error) {
	if f, ok := stdin.(*os.File); ok && isTerminal(f) {
		fmt.Fprint(stderr, prompt)
		restore, err := echoOff(int(f.Fd()))
		if err == nil {
			defer func() {
				restore()
				fmt.Fprintln(stderr)
			}()
		}
	}
	line, err := bufio.NewReaderSize(io.LimitReader(stdin, maxPasswordBytes+1), maxPasswordBytes+1).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading the password: %w", err)
	}
	if len(line) > maxPasswordBytes {
		return "", fmt.Errorf("the password is longer than %d bytes", maxPasswordBytes)
	}
	password := strings.TrimRight(line, "\r\n")
	if password == "" {
		return "", errors.New("no password on stdin: type it at the prompt or pipe it in (echo \"$PASSWORD\" | sluice user password NAME)")
	}
	return password, nil
}

// echoOff stops the terminal fd from echoing what is typed; restore
// turns echo back on.
func echoOff(fd int) (restore func(), err error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}
