agent bench compare --url URL_OF_big-chain-fa3 --baseline-url URL_OF_big-base-fa3 --concurrency 1,16,64,128 --input-len 256 --output-len 128 --repeats 3 --min-window-s 2.5 --json compare-fa3.json
