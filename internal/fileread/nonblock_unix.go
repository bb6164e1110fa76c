//go:build unix

package fileread

import "syscall"

// nonBlock opens a named pipe without waiting for a writer.
const nonBlock = syscall.O_NONBLOCK
