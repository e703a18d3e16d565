package rpcrdma

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// fuzzDecoders: the default limits, and tight ones so the limit checks are reached by
// small inputs too.
var fuzzDecoders = []Decoder{{}, {MaxSegments: 2, MaxWriteChunks: 1}}

// FuzzHeader decodes arbitrary bytes. It must never panic; errors must be the documented
// types with n == 0; an accepted header must have version 1, consume at most the input,
// and re-encode to exactly the bytes it was decoded from (the encoding is canonical), and
// its read list must group without panicking.
func FuzzHeader(f *testing.F) {
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var h, h2 Header
		for _, d := range fuzzDecoders {
			n, err := d.Decode(&h, b)
			if err != nil {
				var ve *VersionError
				var ce *ChunkError
				switch {
				case errors.As(err, &ve):
					if ve.Vers == Version1 || len(b) < 8 {
						t.Fatalf("bogus version error %v", err)
					}
				case errors.As(err, &ce):
					if ce.Field == "" || ce.Err == nil || ce.Offset < 0 || ce.Offset > len(b) {
						t.Fatalf("malformed ChunkError %+v", ce)
					}
				default:
					t.Fatalf("undocumented error type %T: %v", err, err)
				}
				if n != 0 {
					t.Fatalf("n = %d with error", n)
				}
				continue
			}
			if n < FixedSize || n > len(b) || h.Vers != Version1 {
				t.Fatalf("n = %d of %d, vers %d", n, len(b), h.Vers)
			}
			enc, err := h.Append(nil)
			if err != nil {
				t.Fatalf("decoded header does not encode: %v (%+v)", err, h)
			}
			if !bytes.Equal(enc, b[:n]) {
				t.Fatalf("re-encoding differs:\n in %x\nout %x", b[:n], enc)
			}
			if n2, err := d.Decode(&h2, enc); err != nil || n2 != n || !reflect.DeepEqual(normalize(h), normalize(h2)) {
				t.Fatalf("second decode differs: %v", err)
			}
			_, _ = chunks.Group(nil, h.ReadList)
		}
	})
}

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzHeader from the golden vectors, the
// Linux vectors and one malformed message per validation rule (badHeaders). It runs only
// with RPCRDMA_WRITE_CORPUS=1; TestFuzzCorpusCurrent checks the committed files match.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("RPCRDMA_WRITE_CORPUS") == "" {
		t.Skip("set RPCRDMA_WRITE_CORPUS=1 to regenerate the corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzHeader")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range corpusSeeds(t) {
		if err := os.WriteFile(filepath.Join(dir, name), corpusFile(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFuzzCorpusCurrent fails when a seed is missing from the committed corpus.
func TestFuzzCorpusCurrent(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzHeader")
	for name, b := range corpusSeeds(t) {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, corpusFile(b)) {
			t.Errorf("corpus file %s missing or stale (regenerate with RPCRDMA_WRITE_CORPUS=1): %v", name, err)
		}
	}
}

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

func corpusName(prefix, s string) string {
	return prefix + "-" + strings.Trim(nonWord.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

func corpusSeeds(t *testing.T) map[string][]byte {
	seeds := map[string][]byte{}
	for _, g := range goldens {
		msg := g.wire
		if g.body {
			msg = append(append([]byte(nil), g.wire...), rpcTail...)
		}
		seeds[corpusName("golden", g.name)] = msg
	}
	for _, v := range linuxVectors {
		seeds[corpusName("linux", v.name)] = unhex(t, v.hex)
	}
	for _, bh := range badHeaders {
		seeds[corpusName("reject", bh.name)] = bh.msg
	}
	return seeds
}

func corpusFile(b []byte) []byte {
	return []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b))
}
