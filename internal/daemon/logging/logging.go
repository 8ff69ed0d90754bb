// Package logging sets up structured logging with log/slog and routes client-go's klog into it.
package logging

import (
	"io"
	"log/slog"

	"k8s.io/klog/v2"
)

// Setup returns a JSON logger writing to out at level, tagged with the component, makes it the
// default slog logger and sends klog (client-go, leader election) through it.
func Setup(out io.Writer, level slog.Level, component string) *slog.Logger {
	logger := slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: level})).With("component", component)
	slog.SetDefault(logger)
	klog.SetSlogLogger(logger)
	return logger
}
