package soft

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// lockedBuffer is a bytes.Buffer for a logger written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestPeerCloseLoggedAtDebug: a peer that closes its queue pair is a normal
// disconnect, logged at debug, not a warning.
func TestPeerCloseLoggedAtDebug(t *testing.T) {
	var logs lockedBuffer
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: &logs})
	cli, srv := connectPair(t, pairConfig{server: Config{Logger: log}})
	cli.qp.Close()
	<-srv.qp.Done()
	s := logs.String()
	if strings.Contains(s, "[WARN]") || !strings.Contains(s, "[DEBUG] queue pair closed by the peer") {
		t.Errorf("server log after the peer closed:\n%s", s)
	}
}
