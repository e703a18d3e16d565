package nfs4state

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/go-rpcrdma/rpcrdma/internal/stabledir"
	"github.com/go-rpcrdma/rpcrdma/nfsbind/nfs4"
)

// StateFileName is the name of the state file in Options.StateDir. It is a text file:
//
//	nfs4state 1
//	epoch <boot epoch, decimal>
//	client <co_ownerid, hex>        (one line per client that may reclaim)
const StateFileName = "nfs4clients"

// maxStateFile bounds the state file read at New.
const maxStateFile = 8 << 20

// stateRecord is the content of the state file.
type stateRecord struct {
	gen    uint64 // order of snapshots; not stored
	epoch  uint32
	owners []string
}

// store reads and atomically rewrites the state file.
type store struct {
	path    string
	mu      sync.Mutex
	gen     uint64 // last snapshot taken (under Manager.mu)
	written uint64 // last snapshot written (under store.mu)
}

func openStore(dir string) (*store, error) {
	if err := stabledir.MkdirAll(dir, 0o700, syncDir); err != nil {
		return nil, fmt.Errorf("nfs4state: state directory: %w", err)
	}
	return &store{path: filepath.Join(dir, StateFileName)}, nil
}

func (s *store) load() (stateRecord, error) {
	f, err := os.Open(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return stateRecord{}, nil
	}
	if err != nil {
		return stateRecord{}, fmt.Errorf("nfs4state: reading state file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStateFile+1))
	if err != nil {
		return stateRecord{}, fmt.Errorf("nfs4state: reading state file: %w", err)
	}
	rec, err := parseStateFile(data)
	if err != nil {
		return stateRecord{}, fmt.Errorf("nfs4state: state file %s: %w", s.path, err)
	}
	return rec, nil
}

// parseStateFile decodes the state file's content.
func parseStateFile(data []byte) (stateRecord, error) {
	var rec stateRecord
	if len(data) > maxStateFile {
		return rec, fmt.Errorf("longer than %d bytes", maxStateFile)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 2*nfs4.OpaqueLimit+64)
	line := 0
	seen := make(map[string]struct{})
	for sc.Scan() {
		line++
		key, val, _ := strings.Cut(sc.Text(), " ")
		switch {
		case line == 1:
			if key != "nfs4state" || val != "1" {
				return stateRecord{}, fmt.Errorf("line 1: not a version 1 state file")
			}
		case key == "epoch":
			e, err := strconv.ParseUint(val, 10, 32)
			if err != nil {
				return stateRecord{}, fmt.Errorf("line %d: epoch: %w", line, err)
			}
			rec.epoch = uint32(e)
		case key == "client":
			b, err := hex.DecodeString(val)
			if err != nil {
				return stateRecord{}, fmt.Errorf("line %d: client: %w", line, err)
			}
			if len(b) > nfs4.OpaqueLimit {
				return stateRecord{}, fmt.Errorf("line %d: client owner longer than %d bytes", line, nfs4.OpaqueLimit)
			}
			if _, dup := seen[string(b)]; !dup {
				seen[string(b)] = struct{}{}
				rec.owners = append(rec.owners, string(b))
			}
		default:
			return stateRecord{}, fmt.Errorf("line %d: unknown record %q", line, key)
		}
	}
	if err := sc.Err(); err != nil {
		return stateRecord{}, fmt.Errorf("line %d: %w", line+1, err)
	}
	if line == 0 {
		return stateRecord{}, errors.New("empty")
	}
	return rec, nil
}

func formatStateFile(rec *stateRecord) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "nfs4state 1\nepoch %d\n", rec.epoch)
	for _, o := range rec.owners {
		fmt.Fprintf(&b, "client %s\n", hex.EncodeToString([]byte(o)))
	}
	return b.Bytes()
}

// write replaces the state file with rec, unless a later snapshot was written already:
// a temporary file written and fsynced, renamed over it, and the directory fsynced.
func (s *store) write(rec *stateRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec.gen <= s.written {
		return nil
	}
	tmp := s.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("nfs4state: writing state file: %w", err)
	}
	_, err = f.Write(formatStateFile(rec))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("nfs4state: writing state file: %w", err)
	}
	// The rename is stable only with the directory: until then a crash can bring back
	// the previous file.
	if err := syncDir(filepath.Dir(s.path)); err != nil {
		return fmt.Errorf("nfs4state: writing state file: syncing its directory: %w", err)
	}
	s.written = rec.gen
	return nil
}

// snapshotLocked returns what the state file should now hold: the epoch, the confirmed
// clients, and, while the grace period lasts, the previous instance's clients that have
// not yet come back.
func (m *Manager) snapshotLocked() *stateRecord {
	rec := &stateRecord{epoch: m.epoch}
	seen := make(map[string]struct{}, len(m.confirmed)+len(m.grace.pending))
	for o := range m.confirmed {
		seen[o] = struct{}{}
	}
	for o := range m.grace.pending {
		seen[o] = struct{}{}
	}
	for o := range seen {
		rec.owners = append(rec.owners, o)
	}
	sort.Strings(rec.owners)
	if m.store != nil {
		m.store.gen++
		rec.gen = m.store.gen
	}
	return rec
}

// snapshotIfStoredLocked returns a snapshot to persist when there is a state file and
// changed is true, else nil.
func (m *Manager) snapshotIfStoredLocked(changed bool) *stateRecord {
	if m.store == nil || !changed {
		return nil
	}
	return m.snapshotLocked()
}

// persist writes a snapshot taken under m.mu; call it after unlocking.
func (m *Manager) persist(rec *stateRecord) {
	if rec == nil {
		return
	}
	if err := m.store.write(rec); err != nil {
		m.opts.Logger.Error("nfs4 client list not saved; clients may be unable to reclaim after a restart", "error", err)
	}
}
