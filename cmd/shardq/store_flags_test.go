package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardq/shardq/internal/config"
	"github.com/shardq/shardq/internal/keys"
	"github.com/shardq/shardq/internal/redistest"
	"github.com/shardq/shardq/queue"
)

// TestEnqueueKeyFile: shardq enqueue --key-file stores the payload
// encrypted: an Inspector with the ring reads it, one without sees it
// redacted, and no key of Redis holds it in clear. --compression small
// stores a large payload in fewer bytes. A key file that is not a usable
// ring, and an unknown compression, are usage errors that enqueue nothing.
func TestEnqueueKeyFile(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	ctx := context.Background()
	dir := t.TempDir()
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32))
	ringFile := filepath.Join(dir, "ring.json")
	if err := os.WriteFile(ringFile, []byte(`{"current":"k1","keys":{"k1":"`+key+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	const secret = "iban DE89 3704 0044 0532 0130 00"
	code, out, errOut := run(t, env, "enqueue", "--type", "pay", "--key-file", ringFile, "--payload", secret)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	id := enqueued(t, out)[0][0]
	ring, err := queue.ParseKeyRing([]byte(`{"current":"k1","keys":{"k1":"` + key + `"}}`))
	if err != nil {
		t.Fatal(err)
	}
	rdb := srv.Client(t)
	with, err := queue.NewInspector(rdb, queue.Config{KeyRing: ring})
	if err != nil {
		t.Fatal(err)
	}
	ti, err := with.GetTask(ctx, queue.DefaultQueue, id)
	if err != nil || string(ti.Payload) != secret || ti.EncryptedWith != "k1" {
		t.Fatalf("with the ring: %+v, %v", ti, err)
	}
	blind := inspector(t, srv)
	ti, err = blind.GetTask(ctx, queue.DefaultQueue, id)
	if err != nil || ti.Payload != nil || !ti.Redacted {
		t.Fatalf("without the ring: %+v, %v", ti, err)
	}
	if found := redistest.KeysHolding(t, rdb, "*", []byte("DE89")); len(found) > 0 {
		t.Fatalf("keys holding the payload in clear: %v", found)
	}

	big := strings.Repeat(`{"line":"the same words again and again"},`, 100)
	code, out, errOut = run(t, env, "enqueue", "--type", "big", "--compression", "small", "--payload", big)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	ti, err = blind.GetTask(ctx, queue.DefaultQueue, enqueued(t, out)[0][0])
	if err != nil || string(ti.Payload) != big {
		t.Fatalf("compressed payload read back as %d bytes, %v", len(ti.Payload), err)
	}
	used, err := rdb.MemoryUsage(ctx, keys.For(config.DefaultPrefix, queue.DefaultQueue, 0).ShardPrefix()+"0").Result()
	if err != nil || used > int64(len(big)) {
		t.Fatalf("the pending list takes %d bytes for a %d-byte payload: %v", used, len(big), err)
	}

	short := filepath.Join(dir, "short.json")
	if err := os.WriteFile(short, []byte(`{"current":"k1","keys":{"k1":"AQID"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--key-file", filepath.Join(dir, "missing.json")}, "missing.json"},
		{[]string{"--key-file", short}, `key "k1" is 3 bytes, want 32`},
		{[]string{"--compression", "max"}, `--compression "max"`},
	} {
		code, _, errOut := run(t, env, append([]string{"enqueue", "--type", "x", "--payload", "p"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.says) {
			t.Errorf("%v: exit %d, stderr %q; want %d saying %s", tc.args, code, errOut, exitUsage, tc.says)
		}
	}
	qi, err := blind.QueueInfo(ctx, queue.DefaultQueue)
	if err != nil || qi.Pending != 2 {
		t.Fatalf("pending %d after the refused calls, want 2: %v", qi.Pending, err)
	}
}

// TestWorkerKeyFile: shardq worker --key-file decrypts what a producer
// with the same ring encrypted, and hands the command the plaintext.
func TestWorkerKeyFile(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, 32))
	text := `{"current":"k1","keys":{"k1":"` + key + `"}}`
	ringFile := filepath.Join(t.TempDir(), "ring.json")
	if err := os.WriteFile(ringFile, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startShardq(t, redisEnv(srv), "worker", "--key-file", ringFile, "--handler", "cat=exec:cat")
	ring, err := queue.ParseKeyRing([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	client, err := queue.NewClient(srv.Client(t), queue.Config{KeyRing: ring})
	if err != nil {
		t.Fatal(err)
	}
	info, err := client.Enqueue(context.Background(), queue.NewRawTask("cat", []byte("sealed words\n")), queue.Retention(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	insp, err := queue.NewInspector(srv.Client(t), queue.Config{KeyRing: ring})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, insp, queue.DefaultQueue, info.ID, queue.StateSucceeded)
	if code := p.stop(t); code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s", code, p.err.String())
	}
	if !strings.Contains(p.stdout.String(), "sealed words\n") {
		t.Fatalf("the command did not get the plaintext: %q", p.stdout.String())
	}
}

// TestKeyFileShared: a key file that other users may read gets a
// warning on stderr naming its mode and the fix, as ssh does of a
// private key; one only its owner reads gets none. (It was accepted
// silently.)
func TestKeyFileShared(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	env := redisEnv(srv)
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32))
	for mode, warned := range map[os.FileMode]bool{0o600: false, 0o400: false, 0o640: true, 0o644: true, 0o606: true} {
		ringFile := filepath.Join(t.TempDir(), "ring.json")
		if err := os.WriteFile(ringFile, []byte(`{"current":"k1","keys":{"k1":"`+key+`"}}`), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(ringFile, mode); err != nil { // the umask may have narrowed it
			t.Fatal(err)
		}
		code, _, errOut := run(t, env, "enqueue", "--type", "pay", "--key-file", ringFile, "--payload", "x")
		if code != exitOK {
			t.Fatalf("mode %#o: exit %d: %s", mode, code, errOut)
		}
		said := strings.Contains(errOut, "warning: key file "+ringFile+" can be read or written by other users") &&
			strings.Contains(errOut, "chmod 600")
		if said != warned || strings.Contains(errOut, key) {
			t.Errorf("mode %#o: stderr %q, want a warning: %v", mode, errOut, warned)
		}
	}
}

// TestSecretFileShared: the dashboard's secret files get the key file's
// warning too when other users may read them.
func TestSecretFileShared(t *testing.T) {
	t.Parallel()
	for mode, warned := range map[os.FileMode]bool{0o600: false, 0o644: true} {
		p := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(p, []byte("t0ken-from-a-file\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		var errOut bytes.Buffer
		m := &Main{Stderr: &errOut}
		secret, _, err := tokenSource.read(m, map[string]bool{"token-file": true}, "", p)
		if err != nil || secret != "t0ken-from-a-file" {
			t.Fatalf("mode %#o: %q, %v", mode, secret, err)
		}
		said := strings.Contains(errOut.String(), "warning: secret file "+p+" can be read or written by other users")
		if said != warned || strings.Contains(errOut.String(), secret) {
			t.Errorf("mode %#o: stderr %q, want a warning: %v", mode, errOut.String(), warned)
		}
	}
}

// TestWorkerAllowPlaintext: a worker with --key-file refuses a task that
// is not encrypted (a producer without the ring wrote it): it goes to
// dead with an error that names the setting. With --allow-plaintext, as
// during a migration to encryption, it runs.
func TestWorkerAllowPlaintext(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, 32))
	ringFile := filepath.Join(t.TempDir(), "ring.json")
	if err := os.WriteFile(ringFile, []byte(`{"current":"k1","keys":{"k1":"`+key+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	insp := inspector(t, srv)
	ids := enqueueAll(t, srv, []byte("plain words\n"), []queue.Option{queue.Retention(time.Hour)}, "cat")
	p := startShardq(t, redisEnv(srv), "worker", "--key-file", ringFile, "--handler", "cat=exec:cat")
	ti := waitState(t, insp, queue.DefaultQueue, ids["cat"], queue.StateDead)
	if !strings.Contains(ti.LastError, "not encrypted") || !strings.Contains(ti.LastError, "AllowPlaintext") {
		t.Errorf("LastError = %q", ti.LastError)
	}
	if code := p.stop(t); code != exitOK || strings.Contains(p.stdout.String(), "plain words") {
		t.Fatalf("exit %d, the command got %q", code, p.stdout.String())
	}
	p = startShardq(t, redisEnv(srv), "worker", "--key-file", ringFile, "--allow-plaintext", "--handler", "cat=exec:cat")
	if err := insp.RunTask(context.Background(), queue.DefaultQueue, ids["cat"]); err != nil {
		t.Fatal(err)
	}
	waitState(t, insp, queue.DefaultQueue, ids["cat"], queue.StateSucceeded)
	if code := p.stop(t); code != exitOK || !strings.Contains(p.stdout.String(), "plain words\n") {
		t.Fatalf("exit %d, the command got %q", code, p.stdout.String())
	}
}
