package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"
)

const sendAbout = `Stands in for a forwarder: sends a GET to the URL at once and then every interval, until
SIGTERM or SIGINT, with the header X-Sample-From: <pod> ($POD_NAME, or the host name). Each
attempt is logged as one line:
  {"level":"INFO","msg":"sent","url":"...","status":200,"reply":"served by fluentd-0","duration":"1.2ms"}
  {"level":"WARN","msg":"sent","url":"...","err":"Get ...: no such host","duration":"3ms"}
Failures are expected while the name does not resolve yet, and do not stop it. Every attempt
resolves the name and connects afresh (no keep-alive, no proxy), so that each one shows
whether the pod can reach the URL now.
`

func sendMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cl := newCommandLine("send", "-url URL [-interval D] [-timeout D]", sendAbout)
	rawURL := cl.String("url", "", "http or https `URL` to GET (required), e.g. http://fluentd.sys-log.svc.cluster.aws:8888/")
	interval := cl.Duration("interval", 2*time.Second, "time between two requests")
	timeout := cl.Duration("timeout", 5*time.Second, "time limit of one request: name lookup, connection, answer")
	if code, ok := cl.parse(args, stdout, stderr); !ok {
		return code
	}
	if *rawURL == "" {
		return cl.usageError("-url is required")
	}
	if err := checkURL(*rawURL); err != nil {
		return cl.usageError("-url %q: %v", *rawURL, err)
	}
	if *interval <= 0 {
		return cl.usageError("-interval must be positive, not %v", *interval)
	}
	if *timeout <= 0 {
		return cl.usageError("-timeout must be positive, not %v", *timeout)
	}
	send(ctx, *rawURL, *interval, *timeout, podName(), newLogger(stdout))
	return 0
}

// checkURL accepts an absolute http or https URL.
func checkURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return err
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("the scheme must be http or https, not %q", u.Scheme)
	case u.Host == "":
		return fmt.Errorf("no host")
	}
	return nil
}

// send sends a GET to url at once and then every interval until ctx is done, logging each
// attempt.
func send(ctx context.Context, url string, interval, timeout time.Duration, from string, log *slog.Logger) {
	client := &http.Client{
		Transport: &http.Transport{
			Proxy:               nil, // straight to the URL: a proxy would be the client fluentd sees
			DialContext:         (&net.Dialer{Timeout: timeout}).DialContext,
			DisableKeepAlives:   true,
			TLSHandshakeTimeout: timeout,
		},
		Timeout: timeout,
		// Report a redirect as it is, rather than follow it somewhere else.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	log.Info("sending", "url", url, "interval", interval.String(), "from", from)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		sendOne(ctx, client, url, from, log)
		select {
		case <-ctx.Done():
			log.Info("stopping", "reason", context.Cause(ctx).Error())
			return
		case <-tick.C:
		}
	}
}

// sendOne sends one request and logs it, unless ctx ended it.
func sendOne(ctx context.Context, client *http.Client, url, from string, log *slog.Logger) {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err == nil {
		req.Header.Set(fromHeader, from)
		req.Header.Set("User-Agent", "sample-send")
		var resp *http.Response
		if resp, err = client.Do(req); err == nil {
			body, rerr := io.ReadAll(io.LimitReader(resp.Body, 256))
			resp.Body.Close()
			level := slog.LevelInfo
			if resp.StatusCode >= 400 || rerr != nil {
				level = slog.LevelWarn
			}
			attrs := []any{"url", url, "status", resp.StatusCode, "reply", firstLine(body)}
			if rerr != nil {
				attrs = append(attrs, "err", rerr.Error())
			}
			log.Log(ctx, level, "sent", append(attrs, "duration", since(start))...)
			return
		}
	}
	if ctx.Err() != nil {
		return // stopping: cancelled, not failed
	}
	log.Warn("sent", "url", url, "err", err.Error(), "duration", since(start))
}

// since is the time since start, rounded for the log.
func since(start time.Time) string {
	return time.Since(start).Round(10 * time.Microsecond).String()
}

// firstLine is the first line of a reply, without its newline.
func firstLine(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	return string(bytes.TrimSpace(b))
}
