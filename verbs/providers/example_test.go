package providers_test

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/verbs"
	_ "github.com/go-rpcrdma/rpcrdma/verbs/providers"
)

// A program opens whichever provider its user names (a -provider flag, say).
func Example() {
	dev, err := verbs.OpenProvider("soft", verbs.ProviderConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	fmt.Println("opened a soft device")
	// Output: opened a soft device
}
