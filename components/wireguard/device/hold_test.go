package device

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The agent a rollout starts beside the one it replaces waits for the lock, says once that it
// waits, and has it as soon as the old one lets go.
func TestHoldWaitsUntilTheHolderLetsGo(t *testing.T) {
	dir := t.TempDir()
	releaseOld, err := Hold(context.Background(), dir, func() { t.Error("the first holder waited") })
	if err != nil {
		t.Fatal(err)
	}
	waited := 0
	got := make(chan func(), 1)
	go func() {
		release, err := Hold(context.Background(), dir, func() { waited++ })
		if err != nil {
			t.Error(err)
		}
		got <- release
	}()
	select {
	case <-got:
		t.Fatal("the successor took the lock while the old agent held it")
	case <-time.After(300 * time.Millisecond):
	}
	releaseOld()
	select {
	case release := <-got:
		if waited != 1 {
			t.Errorf("waiting called %d times, want once", waited)
		}
		release()
	case <-time.After(5 * time.Second):
		t.Fatal("the successor did not take the lock within 5s of the old agent letting go")
	}
}

// An agent stopped while it stands by gives up waiting with its context's error.
func TestHoldEndsWithItsContext(t *testing.T) {
	dir := t.TempDir()
	release, err := Hold(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Hold(ctx, dir, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Hold with the lock held and a context that ends = %v, want its deadline", err)
	}
}

// An agent of a release without the lock still serves the device's link (its TUN file) in
// its own pod, where this process cannot see its configuration socket: Ensure says the device
// is busy and changes nothing, and takes the link back once that agent has stopped.
func TestEnsureIsBusyWhileAnotherProcessServesTheLink(t *testing.T) {
	needSandbox(t)
	const name = "wg-smp-busy"
	key := genKey(t)
	old, err := NewManager(ModeUserspace, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Ensure(name, key, 51890, 1420); err != nil {
		t.Fatal(err)
	}
	index := mustLink(t, name).Attrs().Index
	// Its socket is in the old pod's own directory: out of this process's sight.
	old.mu.Lock()
	old.userspace[name].stopServing()
	old.mu.Unlock()

	next, err := NewManager(ModeUserspace, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if err := next.Ensure(name, key, 51890, 1420); !errors.Is(err, ErrBusy) {
		t.Fatalf("Ensure while another process serves the link = %v, want ErrBusy", err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	if err := next.Ensure(name, key, 51890, 1420); err != nil {
		t.Fatalf("Ensure once the other process stopped: %v", err)
	}
	if got := mustLink(t, name).Attrs().Index; got != index {
		t.Errorf("link index %d after the takeover, want %d: the link (and its routes) kept", got, index)
	}
	if _, err := next.Peers(name); err != nil {
		t.Errorf("the device is not served by this process after the takeover: %v", err)
	}
}
