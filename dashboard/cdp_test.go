package dashboard_test

// A minimal Chrome DevTools Protocol client over a minimal WebSocket
// client (RFC 6455), standard library only, for the browser test.

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"
)

// wsConn is a client WebSocket connection: text frames out (masked, as
// clients must), whole messages in.
type wsConn struct {
	conn net.Conn
	br   *bufio.Reader
	wmu  sync.Mutex
}

const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

func wsDial(ctx context.Context, raw string) (*wsConn, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	key := base64.StdEncoding.EncodeToString(nonce)
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(conn, 1<<16)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	sum := sha1.Sum([]byte(key + wsGUID))
	if res.StatusCode != http.StatusSwitchingProtocols || res.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		conn.Close()
		return nil, fmt.Errorf("websocket handshake: %s", res.Status)
	}
	return &wsConn{conn: conn, br: br}, nil
}

// writeFrame sends one masked frame.
func (w *wsConn) writeFrame(opcode byte, payload []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	hdr := []byte{0x80 | opcode}
	switch n := len(payload); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n <= 0xffff:
		hdr = append(hdr, 0x80|126, byte(n>>8), byte(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	mask := make([]byte, 4)
	_, _ = rand.Read(mask)
	hdr = append(hdr, mask...)
	masked := make([]byte, len(payload))
	for i, b := range payload {
		masked[i] = b ^ mask[i%4]
	}
	_, err := w.conn.Write(append(hdr, masked...))
	return err
}

// readMessage returns the next text or binary message, answering pings.
func (w *wsConn) readMessage() ([]byte, error) {
	var msg []byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(w.br, h[:]); err != nil {
			return nil, err
		}
		fin, opcode := h[0]&0x80 != 0, h[0]&0x0f
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(w.br, b[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(w.br, b[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		var mask []byte
		if h[1]&0x80 != 0 {
			mask = make([]byte, 4)
			if _, err := io.ReadFull(w.br, mask); err != nil {
				return nil, err
			}
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(w.br, payload); err != nil {
			return nil, err
		}
		if mask != nil {
			for i := range payload {
				payload[i] ^= mask[i%4]
			}
		}
		switch opcode {
		case 0x8:
			return nil, io.EOF
		case 0x9:
			if err := w.writeFrame(0xA, payload); err != nil {
				return nil, err
			}
			continue
		case 0xA:
			continue
		}
		msg = append(msg, payload...)
		if fin {
			return msg, nil
		}
	}
}

// browser is a DevTools session on one page of a headless Chromium, for
// one test or subtest (in gives it to another).
type browser struct {
	t       *testing.T
	c       *cdpConn
	session string
	shots   string
}

// in returns the same page for the (sub)test t.
func (b *browser) in(t *testing.T) *browser {
	return &browser{t: t, c: b.c, session: b.session, shots: b.shots}
}

// cdpConn is the DevTools connection: commands out, replies and events in.
type cdpConn struct {
	ws      *wsConn
	mu      sync.Mutex
	nextID  int64
	waiting map[int64]chan cdpReply
	dialogs []string // messages of JavaScript dialogs that opened
}

type cdpReply struct {
	Result json.RawMessage
	Error  *struct {
		Code    int
		Message string
	}
}

// chromiumPath finds the browser, or "".
func chromiumPath() string {
	if p := os.Getenv("SHARDQ_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// startBrowser starts headless Chromium and opens a page session; both end
// with the test. Screenshots go to t.ArtifactDir() (kept with -artifacts).
func startBrowser(t *testing.T, path string) *browser {
	t.Helper()
	cmd := exec.Command(path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--no-default-browser-check", "--user-data-dir="+t.TempDir(), "--remote-debugging-port=0", "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() {
		// the browser and its helper processes share its process group
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	found := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`DevTools listening on (ws://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	var wsURL string
	select {
	case wsURL = <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("chromium did not print its DevTools address within 30s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, err := wsDial(ctx, wsURL)
	must(t, err)
	t.Cleanup(func() { ws.conn.Close() })
	b := &browser{t: t, c: &cdpConn{ws: ws, waiting: map[int64]chan cdpReply{}}, shots: t.ArtifactDir()}
	go b.c.readLoop()
	var target struct{ TargetID string }
	b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct{ SessionID string }
	b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	b.session = attached.SessionID
	b.call(b.session, "Page.enable", nil, nil)
	b.call(b.session, "Runtime.enable", nil, nil)
	b.call(b.session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}, nil)
	return b
}

// readLoop hands replies to their callers and dismisses dialogs, noting them.
func (b *cdpConn) readLoop() {
	for {
		raw, err := b.ws.readMessage()
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.waiting {
				close(ch)
				delete(b.waiting, id)
			}
			b.mu.Unlock()
			return
		}
		var m struct {
			ID        int64
			Method    string
			SessionID string
			Params    json.RawMessage
			cdpReply
		}
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		if m.ID != 0 {
			b.mu.Lock()
			ch := b.waiting[m.ID]
			delete(b.waiting, m.ID)
			b.mu.Unlock()
			if ch != nil {
				ch <- m.cdpReply
			}
			continue
		}
		if m.Method == "Page.javascriptDialogOpening" {
			var p struct{ Message string }
			_ = json.Unmarshal(m.Params, &p)
			b.mu.Lock()
			b.dialogs = append(b.dialogs, p.Message)
			b.mu.Unlock()
			go b.send(m.SessionID, "Page.handleJavaScriptDialog", map[string]any{"accept": true})
		}
	}
}

// send issues a command and returns its reply channel.
func (b *cdpConn) send(session, method string, params any) (chan cdpReply, error) {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpReply, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	raw, _ := json.Marshal(msg)
	return ch, b.ws.writeFrame(0x1, raw)
}

// call issues a command, waits for its reply and decodes the result into out.
func (b *browser) call(session, method string, params, out any) {
	b.t.Helper()
	if err := b.try(session, method, params, out); err != nil {
		b.t.Fatal(err)
	}
}

// callDeadline bounds a wait for the browser's reply: a guard against a
// browser that hangs, far above what a call takes on a loaded machine.
const callDeadline = 2 * time.Minute

// try is call returning the error.
func (b *browser) try(session, method string, params, out any) error {
	ch, err := b.c.send(session, method, params)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: the browser connection closed", method)
		}
		if r.Error != nil {
			return fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-time.After(callDeadline):
		return fmt.Errorf("%s: no reply in %v", method, callDeadline)
	}
}

// eval evaluates a JavaScript expression in the page and returns its value.
func (b *browser) eval(expr string) any {
	b.t.Helper()
	v, err := b.tryEval(expr)
	if err != nil {
		b.t.Fatal(err)
	}
	return v
}

// tryEval is eval returning the browser's error, such as "Inspected
// target navigated or closed" when the page navigates meanwhile. An
// exception in the expression still fails the test.
func (b *browser) tryEval(expr string) (any, error) {
	b.t.Helper()
	var res struct {
		Result struct {
			Value any
		}
		ExceptionDetails *struct{ Text string }
	}
	err := b.try(b.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &res)
	if err != nil {
		return nil, err
	}
	if res.ExceptionDetails != nil {
		b.t.Fatalf("evaluating %s: %s", expr, res.ExceptionDetails.Text)
	}
	return res.Result.Value, nil
}

// navigate loads url and waits until the page is complete.
func (b *browser) navigate(u string) {
	b.t.Helper()
	b.call(b.session, "Page.navigate", map[string]any{"url": u}, nil)
	b.waitFor("the page at "+u+" to load", `document.readyState === "complete" && location.href !== "about:blank"`)
}

// waitFor polls a JavaScript condition until it is true. A poll that a
// navigation cuts short counts as false: a click that submits a form is
// often followed by a wait, whose first polls meet the page leaving.
func (b *browser) waitFor(what, cond string) {
	b.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		v, err := b.tryEval("!!(" + cond + ")")
		if ok, _ := v.(bool); ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out waiting for %s (%s; last error %v); page at %v", what, cond, err, b.eval("location.href"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// click clicks the element a CSS selector finds.
func (b *browser) click(selector string) {
	b.t.Helper()
	sel, _ := json.Marshal(selector)
	if ok, _ := b.eval(`(function(){ var el = document.querySelector(` + string(sel) + `); if (!el) return false; el.click(); return true })()`).(bool); !ok {
		b.t.Fatalf("nothing to click at %s on %v", selector, b.eval("location.href"))
	}
}

// screenshot saves the whole page as name.png, once it is laid out.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	b.waitFor("the page to be complete", `document.readyState === "complete" && document.body && document.body.scrollWidth > 0`)
	var res struct{ Data string }
	var err error
	for range 20 {
		// a page just loaded may not have a size yet ("0 width")
		if err = b.try(b.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &res); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	must(b.t, err)
	png, err := base64.StdEncoding.DecodeString(res.Data)
	must(b.t, err)
	if len(png) < 1000 {
		b.t.Fatalf("screenshot %s: only %d bytes", name, len(png))
	}
	must(b.t, os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644))
}

func (b *browser) dialogsSeen() []string {
	b.c.mu.Lock()
	defer b.c.mu.Unlock()
	return append([]string(nil), b.c.dialogs...)
}
