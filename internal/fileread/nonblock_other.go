//go:build !unix

package fileread

// nonBlock is zero where open does not wait on a pipe's other end.
const nonBlock = 0
