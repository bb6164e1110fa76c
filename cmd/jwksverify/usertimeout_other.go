//go:build !linux

package main

import (
	"net"
	"time"
)

// setUserTimeout does nothing where TCP_USER_TIMEOUT is not Linux's (grpc-go
// sets it on Linux only too).
func setUserTimeout(net.Conn, time.Duration) {}
