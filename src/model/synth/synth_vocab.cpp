// The synthetic SentencePiece vocabulary: specials, 256 byte-fallback tokens, single characters, then
// "▁word" pieces with every prefix present (so BPE merges can reach each word), then "tokN" fillers.
#include <set>
#include <string>

#include "tinfer/error.h"
#include "model/synth/synth.h"

namespace tinfer {
namespace {

constexpr const char* kSpace = "\xe2\x96\x81";  // U+2581, SentencePiece's word-start marker

// Common English words (and the opening of every TinyStories story), the plausible part of the vocab.
constexpr const char* kWords[] = {
    "the", "a", "and", "to", "of", "in", "is", "it", "was", "he", "she", "that", "for", "on", "with", "as",
    "you", "they", "at", "be", "this", "have", "from", "or", "one", "had", "by", "word", "but", "not", "what",
    "all", "were", "we", "when", "your", "can", "said", "there", "use", "an", "each", "which", "do", "how",
    "their", "if", "will", "up", "other", "about", "out", "many", "then", "them", "these", "so", "some", "her",
    "would", "make", "like", "him", "into", "time", "has", "look", "two", "more", "write", "go", "see", "number",
    "no", "way", "could", "people", "my", "than", "first", "water", "been", "call", "who", "its", "now", "find",
    "long", "down", "day", "did", "get", "come", "made", "may", "part", "once", "upon", "little", "girl", "boy",
    "named", "lily", "tom", "ben", "mom", "dad", "happy", "sad", "big", "small", "dog", "cat", "bird", "tree",
    "park", "play", "played", "toy", "ball", "friend", "friends", "sun", "sky", "red", "blue", "green", "very",
    "wanted", "saw", "went", "home", "house", "love", "loved", "good", "new", "old", "help", "together", "fun",
    "The", "Once", "One", "I", "It", "He", "She", "They", "Lily", "Tom", "Ben",
};

}  // namespace

SynthVocab synth_vocab(int64_t n_vocab) {
  check(n_vocab >= 259, "synthetic vocabulary needs at least 259 tokens (3 specials + 256 bytes), got " +
                            std::to_string(n_vocab));
  SynthVocab v;
  std::set<std::string> have;
  auto add = [&](const std::string& piece, float score, int32_t type) {
    if (int64_t(v.pieces.size()) >= n_vocab || !have.insert(piece).second) return;
    v.pieces.push_back(piece);
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0.0f, 2);
  add("<s>", 0.0f, 3);
  add("</s>", 0.0f, 3);
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    add(hex, 0.0f, 6);
  }
  // Normal pieces score -rank: earlier pieces merge first.
  auto normal = [&](const std::string& piece) { add(piece, -float(v.pieces.size()), 1); };
  normal(kSpace);
  for (char c = 'a'; c <= 'z'; ++c) normal(std::string(1, c));
  for (char c = 'A'; c <= 'Z'; ++c) normal(std::string(1, c));
  for (char c = '0'; c <= '9'; ++c) normal(std::string(1, c));
  for (char c : std::string(".,!?'\"-:;()")) normal(std::string(1, c));
  for (const char* w : kWords) {
    const std::string word = w;
    for (size_t k = 1; k <= word.size(); ++k) normal(kSpace + word.substr(0, k));
  }
  for (int64_t i = int64_t(v.pieces.size()); int64_t(v.pieces.size()) < n_vocab; ++i) normal("tok" + std::to_string(i));
  return v;
}

}  // namespace tinfer
