// Package fileread reads the files jwksverify is pointed at — key sets,
// secrets, certificates, bearer tokens, its configuration — bounded in size
// and without blocking on what is not a file. open(2) of a named pipe waits
// for a writer, outside any context or timeout: a key file that is one (or
// is swapped for one) would hang a fetcher, a reload or a TLS handshake for
// good. Files are opened non-blocking; [Regular] then refuses anything but
// a regular file before reading, and [Any] reads a pipe that has no writer
// as empty.
package fileread

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNotRegular is wrapped by [Regular]'s refusal of a path that is not a
// regular file (a named pipe, a device, a directory, a socket).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the refusal of a file over its limit.
var ErrTooLarge = errors.New("file too large")

// Regular reads the regular file at path, at most limit bytes, and returns
// its contents and its FileInfo (also with a refusal when the file was
// opened). Anything but a regular file is refused with [ErrNotRegular]
// before it is read; a file over limit with [ErrTooLarge].
func Regular(path string, limit int64) ([]byte, os.FileInfo, error) {
	f, err := Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, fmt.Errorf("%s is %w", path, ErrNotRegular)
	}
	if fi.Size() > limit {
		return nil, fi, tooLarge(path, limit)
	}
	b, err := readBounded(f, path, limit)
	return b, fi, err
}

// Any reads path, at most limit bytes, whatever it is: a regular file, or
// a named pipe or a device, which a command may be given as its input
// (--config <(…), /dev/stdin). A pipe without a writer reads as empty
// instead of blocking. Background work and reloads read with [Regular].
func Any(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readBounded(f, path, limit)
}

// Open opens path for reading without blocking on a named pipe: on unix
// with O_NONBLOCK, which changes nothing for a regular file; the runtime
// poller then waits for a pipe's data without holding a thread.
func Open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|nonBlock, 0)
}

// readBounded reads f whole, refusing more than limit bytes.
func readBounded(f *os.File, path string, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(path, limit)
	}
	return b, nil
}

func tooLarge(path string, limit int64) error {
	return fmt.Errorf("%s is larger than %d bytes: %w", path, limit, ErrTooLarge)
}
