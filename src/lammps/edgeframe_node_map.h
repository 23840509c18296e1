/* -*- c++ -*- ----------------------------------------------------------
   Which LAMMPS atoms become engine nodes, and the directed pairs between them.

   - Atoms whose type is mapped to NULL (pair_style hybrid) are left out.
   - Receptive-field pruning: with T message-passing layers, the energy of an
     owned atom depends on atoms at most T hops away, and an atom k hops away
     needs correct features only up to layer T-k. So a pair (i <- j) is kept
     only when i is at most T-1 hops from an owned atom, and a node only when it
     is at most T hops away. Hops are counted on the neighbour list itself
     (cutoff r_cut + skin), a superset of the true edges, so the pruning is
     exact for every step until the next rebuild.
   - Owned atoms come first (engine nodes 0..n_local-1 are the ones whose
     energies count), then ghosts, each in LAMMPS order.
------------------------------------------------------------------------- */

#ifndef LMP_EDGEFRAME_NODE_MAP_H
#define LMP_EDGEFRAME_NODE_MAP_H

#include <vector>

namespace LAMMPS_NS {
class NeighList;

namespace edgeframe_glue {

  struct NodeMap {
    std::vector<int> node_of_atom;    // [nall] engine node or -1 (NULL type or pruned)
    std::vector<int> atom_of_node;    // [n_nodes] LAMMPS local index (owned or ghost)
    std::vector<int> species;         // [n_nodes] potential species index
    std::vector<int> pair_i, pair_j;  // directed pairs (receiver i <- sender j), node indices
    int n_local = 0;                  // owned atoms among the nodes
    int n_candidates = 0;             // mapped atoms before pruning (for the log)

    int n_nodes() const { return (int) atom_of_node.size(); }

    // type: LAMMPS atom types [nall]; type_species[t]: species of type t or -1.
    // list: a full neighbour list that includes ghosts' neighbours (REQ_FULL | REQ_GHOST).
    // layers: T, the number of message-passing layers of the model.
    void build(const int *type, int nlocal, int nall, const std::vector<int> &type_species,
               const NeighList *list, int layers);

   private:
    std::vector<int> m_hop;      // [nall] hops from the nearest owned atom, or -1
    std::vector<int> m_frontier, m_next;
  };

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
