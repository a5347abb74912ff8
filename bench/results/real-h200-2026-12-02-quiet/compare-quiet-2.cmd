agent bench compare --url URL_OF_heavy-skip --concurrency 1,16,64,128 --input-len 256 --output-len 128 --repeats 2 --min-window-s 2.5 --json compare-quiet-2.json --baseline-url http://127.0.0.1:30005
