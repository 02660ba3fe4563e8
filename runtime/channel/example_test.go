package channel_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/facets-dev/facets/runtime/channel"
)

// The Main creates the channel, the Sub opens it with the token it was
// launched with, and the receiving side turns inbox files into user
// messages whose header later proves receipt.
func Example() {
	tmp, _ := os.MkdirTemp("", "facets-example-")
	defer os.RemoveAll(tmp)
	profile := json.RawMessage(`{"version":1,"name":"review","tools":["read"],"source":"global","sourcePath":"/p","resolvedSkills":[],"resolvedExtensions":[]}`)
	main, err := channel.Create(filepath.Join(tmp, "pi-facets-1000"), channel.Manifest{
		MainSessionID: "main-1", Title: "Review auth", Task: "review", Cwd: "/src", Profile: profile})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer main.Close()
	sub, err := channel.Open(main.Dir(), main.Manifest().Token)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sub.Close()
	if _, err := sub.Send(channel.ToMain, "found two issues"); err != nil {
		fmt.Println(err)
		return
	}

	receipts := channel.NewMemoryReceipts() // a persisted Pi session in real use
	rx := channel.NewReceiver(channel.ToMain, receipts, func(d channel.Delivery) error {
		// The bridge submits d.Text() as a user message; when the session
		// records it, the header is parsed back into the receipt.
		r, body, err := channel.ParseDeliveryHeader(d.Text())
		if err != nil {
			return err
		}
		fmt.Println("delivered:", body)
		return receipts.Record(r)
	}, nil)
	res := rx.Scan(main)
	fmt.Println("acknowledged:", res.Acknowledged)
	fmt.Println("removable:", main.Remove() == nil)
	// Output:
	// delivered: found two issues
	// acknowledged: 1
	// removable: true
}
