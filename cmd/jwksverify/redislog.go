package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jwksverify/jwksverify/internal/loglimit"
	"github.com/jwksverify/jwksverify/internal/textclip"
	"github.com/redis/go-redis/v9"
)

// redisLog carries go-redis's own lines (a Sentinel it cannot reach, a dial
// that failed, a failed re-authentication) into the service's log: a warn
// line "redis client" with go-redis's words as text, at most
// loglimit.DefaultRate a second, then "redis client lines not logged" with
// their count. go-redis wrote them to stderr as unstructured text, about
// one a second while a Sentinel was down, which a JSON log pipeline could
// not parse or rate.
type redisLog struct{ log *slog.Logger }

// newRedisLog is a go-redis logger writing to h.
func newRedisLog(h slog.Handler) redisLog {
	return redisLog{log: slog.New(&rateLimited{Handler: h, lim: loglimit.New(loglimit.DefaultRate, "redis client lines not logged"), log: slog.New(h)})}
}

// Printf implements go-redis's logging interface.
func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	text := textclip.Clip(strings.TrimSpace(fmt.Sprintf(format, v...)), maxServerErrorLine)
	l.log.LogAttrs(ctx, slog.LevelWarn, "redis client", slog.String("text", text))
}

// useRedisLog makes go-redis write its lines through h. go-redis's logger is
// one for the process, so only the serving command sets it; a program that
// embeds package service keeps its own choice.
func useRedisLog(h slog.Handler) { redis.SetLogger(newRedisLog(h)) }
