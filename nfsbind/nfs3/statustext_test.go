package nfs3

import (
	"strconv"
	"testing"
)

// Every status with a name has words, so no user sees a bare code.
func TestStatusTexts(t *testing.T) {
	for s, name := range statusNames {
		if _, ok := statusTexts[s]; !ok {
			t.Errorf("%s has no text", name)
		}
	}
	for s := MountStat(0); s < 20000; s++ {
		named := s.String() != "mountstat3("+strconv.Itoa(int(s))+")"
		if _, ok := mountStatTexts[s]; named != ok {
			t.Errorf("%v: named %v, has text %v", s, named, ok)
		}
	}
}
