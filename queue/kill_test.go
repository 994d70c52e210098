package queue

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The environment of the child process of TestAcknowledgedSurvivesKill9.
const (
	killChildDir    = "ORDERSYNC_QUEUE_KILL_CHILD_DIR"
	killChildPrefix = "ORDERSYNC_QUEUE_KILL_CHILD_PREFIX"
	killChildCount  = 1000
)

// With the default sync policy every acknowledged write has reached the
// operating system: a process killed with SIGKILL right after the acks loses
// nothing. The child publishes and reports; the parent kills it and reads
// the store with a new server.
func TestAcknowledgedSurvivesKill9(t *testing.T) {
	t.Parallel()
	if dir := os.Getenv(killChildDir); dir != "" {
		runKillChild(dir, os.Getenv(killChildPrefix))
		return
	}
	dir := t.TempDir()
	cfg := uniqueConfig()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAcknowledgedSurvivesKill9$")
	cmd.Env = append(os.Environ(), killChildDir+"="+dir, killChildPrefix+"="+cfg.SubjectPrefix)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %v (output %q)", err, line)
	}
	acked, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "acked ")))
	if err != nil || acked != killChildCount {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q, want acked %d", line, killChildCount)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown, no flush
		t.Fatal(err)
	}
	cmd.Wait()

	e := startEmbedded(t, dir, 0)
	q := newQueue(t, connect(t, e), killChildConfig(cfg.SubjectPrefix))
	seen := drain(t, ctx, q.Events(), killChildCount)
	for i := range killChildCount {
		if seen[fmt.Sprintf("msg-%06d", i)] == 0 {
			t.Fatalf("acknowledged event %d lost to kill -9", i)
		}
	}
}

func killChildConfig(prefix string) Config {
	return Config{SubjectPrefix: prefix, EventsStream: prefix + "_EVENTS", OrdersStream: prefix + "_ORDERS"}
}

// runKillChild publishes killChildCount events, says so, and waits to be
// killed.
func runKillChild(dir, prefix string) {
	e, err := StartEmbedded(EmbeddedConfig{StoreDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	nc, err := e.Connect("kill-child")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	q, err := New(context.Background(), nc, killChildConfig(prefix))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for i := range killChildCount {
		if _, err := q.PublishEvent(context.Background(), testEvent(i)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	fmt.Printf("acked %d\n", killChildCount)
	// Waits for the parent's kill, the subject; exits 3 if it never comes.
	time.Sleep(time.Minute)
	os.Exit(3)
}
