package main

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jwksverify/jwksverify/config"
)

// TestRestartNeeded: a reload names each setting it cannot apply (the
// listeners, the HTTP server's timeouts, the log) and nothing else.
func TestRestartNeeded(t *testing.T) {
	cur := &config.Plan{Listen: "127.0.0.1:8080", LogLevel: slog.LevelInfo, LogFormat: "json", ShutdownTimeout: time.Second}
	tests := []struct {
		name   string
		change func(*config.Plan)
		want   []string
	}{
		{"nothing", func(*config.Plan) {}, nil},
		{"shutdown-applies", func(p *config.Plan) { p.ShutdownTimeout = time.Minute }, nil},
		{"listen", func(p *config.Plan) { p.Listen = "127.0.0.1:9090" }, []string{"listen"}},
		{"grpc", func(p *config.Plan) { p.GRPCListen = "127.0.0.1:9091" }, []string{"grpc_listen"}},
		{"timeouts", func(p *config.Plan) { p.HTTP.Write = time.Minute }, []string{"HTTP server timeouts (derived from the issuers' refresh waits)"}},
		{"log", func(p *config.Plan) { p.LogLevel, p.LogFormat = slog.LevelDebug, "text" }, []string{"log.level", "log.format"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := *cur
			tt.change(&next)
			if got := restartNeeded(cur, &next); !slices.Equal(got, tt.want) {
				t.Errorf("restartNeeded() = %q, want %q", got, tt.want)
			}
		})
	}
}
