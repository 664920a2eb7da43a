module dev.mighty/mailbox-bench/go-chan

go 1.19
