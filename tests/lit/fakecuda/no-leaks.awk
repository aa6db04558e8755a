# no-leaks.awk LOG: fails (exit 1, naming them) when the pretend driver's
# count at exit (FAKECUDA_LOG, tests/fakecuda/fake_driver.c) has anything
# still live, or a broken rule of the driver; and when it has no count.
/^(errors|live_)/ { seen = 1; if ($2 != 0) { print "still at exit: " $0; bad = 1 } }
END {
    if (!seen) { print "no count at exit in " FILENAME; exit 1 }
    exit bad
}
