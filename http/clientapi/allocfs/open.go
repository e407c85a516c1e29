// Package allocfs opens the files of an allocation directory for the
// client agent's file system and log endpoints, and caps how many of
// those reads run at once.
//
// A task owns its directory and may leave anything there: a named pipe
// (mkfifo local/fifo), a socket, a device node, a symbolic link. An
// open(2) of a pipe without a writer blocks, and a thread blocked in
// open cannot be interrupted: before this package, every abandoned read
// of a task's pipe left a thread and its descriptors behind until the
// agent could open nothing (issue 28). So only regular files are read:
// the type is checked before the open (a device is never opened), the
// open is non-blocking (a pipe swapped in after the check cannot block
// it either) and the opened descriptor is checked again.
package allocfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// NotRegularError is the answer to a read of something other than a
// regular file: Kind names what it is ("a named pipe", "a socket", …).
type NotRegularError struct {
	// Path is the path as the caller named it.
	Path string
	// Mode is the file's type.
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("path %q is %s, not a regular file", e.Path, Kind(e.Mode))
}

// Kind names a file type with its article, for messages.
func Kind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "a regular file"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	}
	return "an irregular file"
}

// openFlags open a file for reading without ever blocking in open(2)
// (O_NONBLOCK: a pipe without a writer, a device waiting for carrier)
// and without making a terminal the agent's controlling one.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY

// OpenInRoot opens name, a path inside root, for reading, when it is a
// regular file. root resolves every symbolic link itself, component by
// component with O_NOFOLLOW, and refuses one that leads out of it (the
// kernel never follows a link); a link that stays inside leads to what
// it names, which is judged like any file. shown is the path as the
// caller named it, for messages. Anything but a regular file is a
// *NotRegularError and is not opened; errors of root (fs.ErrNotExist,
// an escape) are returned as they are.
func OpenInRoot(root *os.Root, name, shown string) (*os.File, error) {
	info, err := root.Stat(name)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, &NotRegularError{Path: shown, Mode: info.Mode()}
	}
	f, err := root.OpenFile(name, openFlags, 0)
	if err != nil {
		return nil, err
	}
	return checkOpened(f, shown)
}

// OpenNoFollow opens path for reading, when it is a regular file and not
// a symbolic link (O_NOFOLLOW): the log files, which the client writes
// and nothing links. shown is the path for messages.
func OpenNoFollow(path, shown string) (*os.File, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, &NotRegularError{Path: shown, Mode: info.Mode()}
	}
	f, err := os.OpenFile(path, openFlags|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) {
		// Swapped for a link since the Lstat.
		return nil, &NotRegularError{Path: shown, Mode: fs.ModeSymlink}
	}
	if err != nil {
		return nil, err
	}
	return checkOpened(f, shown)
}

// checkOpened refuses what was swapped in between the check and the
// open, then clears O_NONBLOCK: reads of a regular file do not need it,
// and a file system that honours it would answer EAGAIN.
func checkOpened(f *os.File, shown string) (*os.File, error) {
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: shown, Mode: info.Mode()}
	}
	rc, err := f.SyscallConn()
	if err == nil {
		var serr error
		err = rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) })
		if err == nil {
			err = serr
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("path %q: %w", shown, err)
	}
	return f, nil
}
